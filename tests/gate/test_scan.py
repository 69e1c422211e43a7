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
