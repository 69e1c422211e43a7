"""The gate's static scan (SPEC §5 step 1): banned names and the ways around a name list."""

from __future__ import annotations

import pytest

from gitvault.core.config import defaults
from gitvault.gate.scan import Reason, scan_files, scan_source

BANNED = defaults().verify.banned
TESTS = "from skill import *\n\nassert add(1, 2) == 3\n"
EXAMPLE = "from skill import *\n\nprint(add(2, 3))\n"


def skill_with(line: str) -> str:
    return f"import os\n\n\ndef add(a, b):\n    {line}\n    return a + b\n"


def rules(source: str, file: str = "skill.py") -> set[str]:
    return {r.rule for r in scan_source(file, source, BANNED)}


def test_a_clean_skill_passes() -> None:
    files = {"skill.py": "import re\n\n\ndef add(a, b):\n    return a + b\n",
             "test_skill.py": TESTS, "example.py": EXAMPLE}
    assert scan_files(files, BANNED) == []


EVASIONS = [
    # (class of evasion, line inside the function, rule it must trip)
    ("banned import", "import subprocess", "banned"),
    ("banned import under an alias", "import socket as s", "banned"),
    ("banned from-import", "from subprocess import run", "banned"),
    ("banned dotted use", "os.system('id')", "banned"),
    ("banned name imported from os", "from os import fork", "banned"),
    ("fullwidth (NFKC) identifier", "import ｓｕｂｐｒｏｃｅｓｓ", "banned"),
    ("fullwidth attribute", "os.ｓｙｓｔｅｍ('id')", "banned"),
    ("__import__ of a built string", "__import__('o' + 's').popen('id')", "dynamic-code"),
    ("eval", "eval('1')", "dynamic-code"),
    ("exec", "exec('x = 1')", "dynamic-code"),
    ("compile", "compile('1', 'f', 'eval')", "dynamic-code"),
    ("globals() lookup", "globals()['os']", "dynamic-code"),
    ("importlib", "import importlib", "risky-module"),
    ("dunder walk to subclasses", "().__class__.__base__.__subclasses__()", "dunder-walk"),
    ("__builtins__", "__builtins__['open']", "dunder-walk"),
    ("function globals", "add.__globals__", "dunder-walk"),
    ("computed getattr", "getattr(os, 'sy' + 'stem')('id')", "computed-getattr"),
    ("getattr of a process function", "getattr(os, 'popen')", "computed-getattr"),
    ("getattr of a dunder string", "getattr(add, '__globals__')", "dunder-walk"),
    ("os.popen", "os.popen('id')", "risky-module"),
    ("os.exec*", "os.execv('/bin/sh', ['sh'])", "risky-module"),
    ("os.spawn*", "os.spawnlp(0, 'sh', 'sh')", "risky-module"),
    ("os.posix_spawn", "os.posix_spawn('/bin/sh', ['sh'], {})", "risky-module"),
    ("process attribute on an alias (resolved)", "o = os; o.system('id')", "banned"),
    ("process attribute via sys.modules", "sys.modules['os'].system('id')", "risky-module"),
    ("pty", "import pty", "risky-module"),
    ("multiprocessing", "import multiprocessing", "risky-module"),
    ("http client", "import http.client", "risky-module"),
    ("urllib", "from urllib.request import urlopen", "risky-module"),
    ("asyncio subprocess/network", "import asyncio", "risky-module"),
    ("cffi", "import cffi", "risky-module"),
    ("pickle (code deserialisation)", "import pickle", "risky-module"),
    ("marshal (code objects)", "import marshal", "risky-module"),
    ("types.CodeType", "import types; types.CodeType", "risky-module"),
    ("private C module", "import _posixsubprocess", "private-module"),
    ("posix module", "import posix", "risky-module"),
    ("third-party package", "import requests", "risky-module"),
    ("package not allowed", "import numpy", "not-allowed"),
    ("relative import", "from . import x", "relative-import"),
]


@pytest.mark.parametrize("line, rule", [(line, rule) for _, line, rule in EVASIONS],
                         ids=[name for name, _, _ in EVASIONS])
def test_each_evasion_class_is_refused(line: str, rule: str) -> None:
    found = scan_source("skill.py", skill_with(line), BANNED)
    assert rule in {r.rule for r in found}, found
    assert any(r.file == "skill.py" and r.line == 5 for r in found), found


def test_platform_system_is_not_a_process() -> None:
    assert rules("import platform\n\n\ndef f():\n    return platform.system()\n") == set()


def test_reasons_name_rule_file_and_line() -> None:
    files = {"skill.py": "def add(a, b):\n    return a + b\n",
             "test_skill.py": "from skill import *\nimport socket\nassert add(1, 2) == 3\n",
             "example.py": EXAMPLE}
    found = scan_files(files, BANNED)
    assert found == [Reason("banned", "test_skill.py", 2,
                            "imports 'socket' (verify.banned has 'socket')")]
    assert str(found[0]) == "banned: test_skill.py:2: imports 'socket' (verify.banned has 'socket')"
    assert found[0].ref == "banned: test_skill.py:2"


def test_example_is_scanned_too() -> None:
    files = {"skill.py": "def add(a, b):\n    return a + b\n", "test_skill.py": TESTS,
             "example.py": "from skill import *\nexec('print(1)')\n"}
    assert [(r.rule, r.file, r.line) for r in scan_files(files, BANNED)] == \
        [("dynamic-code", "example.py", 2)]


def test_config_banned_list_is_used() -> None:
    assert rules(skill_with("import json")) == set()
    found = scan_source("skill.py", skill_with("import json"), [*BANNED, "json"])
    assert [r.rule for r in found] == ["banned"]


def test_allowed_packages_may_be_imported() -> None:
    source = "import numpy\n\n\ndef f():\n    return numpy.zeros(1)\n"
    assert rules(source) == {"not-allowed"}
    assert scan_source("skill.py", source, BANNED, ["numpy"]) == []


def test_body_limit_counts_non_blank_lines() -> None:
    body = "def f():\n" + "".join(f"    x{i} = {i}\n\n" for i in range(79)) + "    return 1\n"
    files = {"skill.py": body, "test_skill.py": TESTS.replace("add(1, 2) == 3", "f() == 1"),
             "example.py": "from skill import *\nf()\n"}
    assert scan_files(files, BANNED, max_body_lines=81) == []
    found = scan_files(files, BANNED, max_body_lines=80)
    assert [(r.rule, r.file) for r in found] == [("body-too-long", "skill.py")]
    assert "81 non-blank lines; the limit is 80" in found[0].message


def test_missing_files_syntax_errors_and_empty_tests() -> None:
    found = scan_files({"skill.py": "def f(:\n", "test_skill.py": "x = 1\n"}, BANNED)
    assert {(r.rule, r.file) for r in found} == {
        ("syntax", "skill.py"), ("no-asserts", "test_skill.py"), ("missing-file", "example.py")}


# -- the scan reads what Python runs (issue 11, class 11) --------------------------------

HIDDEN = '# \\u000aimport subprocess; subprocess.run(["id"])\n'  # a newline once decoded


@pytest.mark.parametrize("cookie", ["# coding: raw_unicode_escape", "# -*- coding: utf-7 -*-",
                                    "#!/usr/bin/env python\n# vim: set fileencoding=latin-1 :"])
def test_a_coding_cookie_other_than_utf8_is_refused(cookie: str) -> None:
    source = f"{cookie}\n\n\ndef add(a, b):\n    return a + b\n{HIDDEN}"
    found = scan_source("skill.py", source, BANNED)
    assert [(r.rule, r.line) for r in found] == [("encoding", cookie.count("\n") + 1)], found
    assert "only UTF-8 is allowed" in found[0].message


def test_a_utf8_cookie_and_bom_are_fine() -> None:
    for head in ("# -*- coding: utf-8 -*-\n", "\ufeff", "# coding=UTF-8\n"):
        assert rules(head + "def add(a, b):\n    return a + b\n") == set()


def test_bytes_that_are_not_utf8_are_refused() -> None:
    source = b"def add(a, b):\n    return a + b  # \xff\n".decode("utf-8", "surrogateescape")
    found = scan_source("skill.py", source, BANNED)
    assert [(r.rule, r.line) for r in found] == [("encoding", 2)]


@pytest.mark.parametrize("char", ["\u202e", "\u2066", "\u200b", "\u2060", "\u00ad", "\u2028",
                                  "\x1b", "\ufeff"])
def test_bidirectional_and_invisible_characters_are_refused(char: str) -> None:
    source = f'def add(a, b):\n    return a + b\n\n\nACCESS = "user{char}"  # check\n'
    found = scan_source("skill.py", source, BANNED)
    assert [(r.rule, r.line) for r in found] == [("hidden-character", 5)], found
    assert f"U+{ord(char):04X}" in found[0].message


@pytest.mark.parametrize("line", [
    "uuid._get_command_stdout('id')",
    "from uuid import _get_command_stdout",
    "getattr(uuid, '_get_command_stdout')('id')",
    "u = uuid; u._get_command_stdout('id')",
    "os.path._joinrealpath",
])
def test_private_attributes_of_modules_are_refused(line: str) -> None:
    source = f"import os\nimport uuid\n\n\ndef add(a, b):\n    {line}\n    return a + b\n"
    assert "private-attribute" in rules(source), scan_source("skill.py", source, BANNED)


def test_public_attributes_and_own_privates_are_fine() -> None:
    source = ("import uuid\n\n\nclass Box:\n    def __init__(self):\n        self._n = 1\n\n\n"
              "def add(a, b):\n    return a + b + Box()._n + len(uuid.uuid4().hex) + "
              "len(uuid.__name__)\n")
    assert rules(source) == set()
    assert rules("from skill import _helper\n\nassert _helper() == 1\n", "test_skill.py") == set()


def test_a_flood_of_blank_lines_hides_nothing() -> None:
    source = "def add(a, b):\n    return a + b\n" + "\n" * 200_000 + "import subprocess\n"
    assert "banned" in rules(source)
