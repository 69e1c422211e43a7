"""Step 1 of the verification gate (SPEC §5): a static scan of a code skill's AST.

It refuses ``verify.banned`` names and the usual ways around a name list: dynamic
import and evaluation, dunder walks, computed ``getattr``, other modules that start
processes, open connections, load foreign code or deserialise code. Identifiers and
the strings compared with them are NFKC-normalised, as Python normalises identifiers.
The scan is fast feedback; the sandbox is what keeps the machine safe.
"""

from __future__ import annotations

import ast
import io
import os
import re
import sys
import tokenize
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

SKILL, TESTS, EXAMPLE = "skill.py", "test_skill.py", "example.py"
FILES = (SKILL, TESTS, EXAMPLE)
# What a code skill folder holds (SPEC §5): SKILL.md and the three files, nothing else.
FOLDER_FILES = ("SKILL.md", *FILES)
# Characters that make code read differently from how it runs (Trojan Source): every
# format character (bidirectional controls, zero-width and invisible ones), line and
# paragraph separators, and control characters other than tab, newline, CR, form feed.
_HIDDEN_CATEGORIES = frozenset({"Cf", "Zl", "Zp", "Cc"})
_SUSPECT = re.compile(r"[^\t\n\r\f\x20-\x7e]")  # what may be hidden: every other character

# Modules (and their submodules) that start processes, open connections, load foreign
# code, deserialise code or reach into the interpreter, beyond verify.banned.
RISKY_MODULES = frozenset({
    "subprocess", "socket", "ctypes", "cffi", "pty", "multiprocessing", "concurrent",
    "asyncio", "http", "urllib", "urllib3", "requests", "httpx", "ftplib", "smtplib",
    "poplib", "imaplib", "telnetlib", "nntplib", "socketserver", "xmlrpc", "ssl",
    "webbrowser", "pickle", "cPickle", "dill", "marshal", "shelve", "copyreg", "importlib",
    "imp", "pkgutil", "zipimport", "runpy", "code", "codeop", "pdb", "bdb", "builtins",
    "gc", "inspect", "signal", "resource", "sysconfig", "posix", "nt", "mmap", "fcntl",
    "termios", "tty", "threading", "_thread", "atexit",
})
# Dotted names refused wherever they are reached (import, attribute, from-import).
RISKY_NAMES = frozenset({
    "os.system", "os.popen", "os.fork", "os.forkpty", "os.kill", "os.killpg", "os.execl",
    "os.execle", "os.execlp", "os.execlpe", "os.execv", "os.execve", "os.execvp",
    "os.execvpe", "os.spawnl", "os.spawnle", "os.spawnlp", "os.spawnlpe", "os.spawnv",
    "os.spawnve", "os.spawnvp", "os.spawnvpe", "os.posix_spawn", "os.posix_spawnp",
    "os.startfile", "os.setuid", "os.setgid", "os.chroot", "os.register_at_fork",
    "sys.modules", "sys._getframe", "sys.settrace", "sys.setprofile", "sys.addaudithook",
    "sys.meta_path", "sys.path_hooks", "types.CodeType", "types.FunctionType",
})
# Calls that evaluate code or look names up dynamically.
DYNAMIC_CALLS = frozenset({
    "__import__", "eval", "exec", "compile", "globals", "locals", "vars", "breakpoint",
    "help",
})
NAME_LOOKUPS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
# Attribute names that start a process however the object was reached.
PROCESS_ATTRS = frozenset(name.split(".", 1)[1] for name in RISKY_NAMES
                          if name.startswith("os."))
HARMLESS_DUNDERS = frozenset({
    "__name__", "__doc__", "__init__", "__qualname__", "__len__", "__iter__", "__next__",
    "__enter__", "__exit__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
    "__hash__", "__repr__", "__str__", "__contains__", "__getitem__", "__setitem__",
    "__add__", "__sub__", "__mul__", "__bool__", "__post_init__", "__slots__", "__all__",
    "__main__", "__file__", "__annotations__", "__version__",
})


@dataclass(frozen=True)
class Reason:
    """Why the gate refused: the rule, the file and line, and a message for a person."""

    rule: str
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{self.rule}: {where}: {self.message}"

    @property
    def ref(self) -> str:
        """The reference kept in a gate record: rule, file and line, no program text."""
        return f"{self.rule}: {self.file}:{self.line}" if self.line else f"{self.rule}: {self.file}"


def norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _dotted(node: ast.AST) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"]; None when the chain does not start at a name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(norm(node.attr))
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(norm(node.id))
    return parts[::-1]


class _Scanner(ast.NodeVisitor):
    def __init__(self, file: str, banned: Iterable[str], allowed: Iterable[str]) -> None:
        self.file = file
        self.banned = {norm(b) for b in banned}
        self.allowed = {norm(a).split(".")[0].replace("-", "_") for a in allowed}
        self.aliases: dict[str, str] = {}  # local name -> dotted module or object it names
        self.reasons: list[Reason] = []

    def refuse(self, rule: str, node: ast.AST, message: str) -> None:
        self.reasons.append(Reason(rule, self.file, getattr(node, "lineno", 0), message))

    # -- names ------------------------------------------------------------------------
    def check_name(self, dotted: str, node: ast.AST, how: str) -> bool:
        """Refuse ``dotted`` (a module or module.attribute) if banned or risky."""
        parts = dotted.split(".")
        prefixes = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
        for prefix in prefixes:
            if prefix in self.banned:
                self.refuse("banned", node, f"{how} {dotted!r} (verify.banned has {prefix!r})")
                return True
        for prefix in prefixes:
            if prefix in RISKY_NAMES or (prefix in RISKY_MODULES and prefix == parts[0]):
                self.refuse("risky-module", node,
                            f"{how} {dotted!r}: it can start processes, open connections, "
                            "load or deserialise code, or reach into the interpreter")
                return True
        if parts[0].startswith("_") and parts[0] != "__future__":
            self.refuse("private-module", node, f"{how} the private module {parts[0]!r}")
            return True
        private = next((p for p in parts[1:] if p.startswith("_") and p not in HARMLESS_DUNDERS),
                       None)
        if private is not None and parts[0] != "skill":
            self.refuse("private-attribute", node,
                        f"{how} {dotted!r}: {private!r} is private to its module (its helpers "
                        "can start processes or reach past the name list)")
            return True
        return False

    def check_import(self, module: str, node: ast.AST) -> None:
        if self.check_name(module, node, "imports"):
            return
        top = module.split(".")[0]
        if top == "skill" and self.file != SKILL:
            return
        if top not in sys.stdlib_module_names and top not in self.allowed:
            self.refuse("not-allowed", node,
                        f"imports {top!r}, which is neither the standard library nor in "
                        "verify.allowed_packages")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            name = norm(alias.name)
            self.check_import(name, node)
            local = norm(alias.asname) if alias.asname else name.split(".")[0]
            self.aliases[local] = name if alias.asname else local
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = norm(node.module or "")
        if node.level:
            self.refuse("relative-import", node, "relative imports are not allowed")
            return
        self.check_import(module, node)
        for alias in node.names:
            name = norm(alias.name)
            if name == "*":
                if module != "skill":
                    self.refuse("star-import", node,
                                f"'from {module} import *' hides which names are used")
                continue
            if module != "skill":
                self.check_name(f"{module}.{name}", node, "imports")
            self.aliases[norm(alias.asname) if alias.asname else name] = f"{module}.{name}"
            self.check_dunder(name, node)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        """``o = os`` makes ``o`` another name of what ``os`` names."""
        parts = _dotted(node.value)
        if parts is not None and parts[0] in self.aliases:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.aliases[norm(target.id)] = self.resolve(parts)
        self.generic_visit(node)

    # -- uses -------------------------------------------------------------------------
    def resolve(self, parts: list[str]) -> str:
        head = self.aliases.get(parts[0], parts[0])
        return ".".join([head, *parts[1:]])

    def check_dunder(self, name: str, node: ast.AST) -> None:
        if name.startswith("__") and name.endswith("__") and name not in HARMLESS_DUNDERS:
            self.refuse("dunder-walk", node, f"uses {name!r} (a way around the name list)")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = norm(node.attr)
        self.check_dunder(attr, node)
        parts = _dotted(node)
        if parts is not None and parts[0] in self.aliases:
            self.check_name(self.resolve(parts), node, "uses")
        elif attr in PROCESS_ATTRS:
            self.refuse("risky-module", node, f"uses .{attr} (starts a process)")
        elif parts is not None and parts[0] in RISKY_MODULES | self.banned:
            self.check_name(".".join(parts), node, "uses")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        name = norm(node.id)
        self.check_dunder(name, node)
        if name in DYNAMIC_CALLS:
            self.refuse("dynamic-code", node, f"uses {name}() (evaluates or imports code by name)")
        elif name in self.banned:
            self.refuse("banned", node, f"uses {name!r}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = norm(func.id) if isinstance(func, ast.Name) else None
        if name in NAME_LOOKUPS and len(node.args) >= 2:
            attr = node.args[1]
            if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
                self.refuse("computed-getattr", node,
                            f"{name}() with a computed attribute name")
            else:
                text = norm(attr.value)
                self.check_dunder(text, node)
                if text in PROCESS_ATTRS or text in self.banned:
                    self.refuse("computed-getattr", node, f"{name}() of {text!r}")
                base = _dotted(node.args[0])
                if base is not None and base[0] in self.aliases:
                    self.check_name(f"{self.resolve(base)}.{text}", node, "uses")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and "__" in node.value:
            text = norm(node.value).strip()
            if text.startswith("__") and text.endswith("__") and text.isidentifier():
                self.check_dunder(text, node)


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + text.count("\r", 0, index) \
        - text.count("\r\n", 0, index) + 1


def encoding_reasons(file: str, data: bytes) -> list[Reason]:
    """The bytes Python will read: UTF-8 only (no other coding cookie), and no character
    that hides code from a reader (Trojan Source)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [Reason("encoding", file, data.count(b"\n", 0, exc.start) + 1,
                       f"not UTF-8 text (bad byte at offset {exc.start})")]
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        return [Reason("encoding", file, exc.lineno or 1, f"bad coding cookie: {exc.msg}")]
    if encoding not in ("utf-8", "utf-8-sig"):
        line = next((i for i, ln in enumerate(text.splitlines()[:2], 1) if "coding" in ln), 1)
        return [Reason("encoding", file, line,
                       f"declares the encoding {encoding!r}; only UTF-8 is allowed (Python "
                       "would run other bytes than a reader sees)")]
    reasons = []
    start = 1 if text.startswith("\ufeff") else 0  # a leading BOM is the UTF-8 signature
    for match in _SUSPECT.finditer(text, start):
        char = match.group()
        if unicodedata.category(char) not in _HIDDEN_CATEGORIES:
            continue
        name = unicodedata.name(char, "a control character")
        reasons.append(Reason("hidden-character", file, _line_of(text, match.start()),
                              f"U+{ord(char):04X} ({name}) makes the code read differently "
                              "from how it runs"))
        if len(reasons) == 5:  # enough to find them; a flood of them says no more
            break
    return reasons


def scan_source(file: str, source: str, banned: Iterable[str] = (),
                allowed: Iterable[str] = ()) -> list[Reason]:
    """The reasons one file fails the scan (empty: it passes). ``source`` is the file's
    bytes decoded as UTF-8 (undecodable bytes as surrogate escapes): the scan parses
    exactly the bytes Python will execute."""
    data = source.encode("utf-8", "surrogateescape")
    hidden = encoding_reasons(file, data)
    if hidden:
        return hidden
    try:
        tree = ast.parse(data, filename=file)
    except SyntaxError as exc:
        return [Reason("syntax", file, exc.lineno or 0, f"not valid Python: {exc.msg}")]
    except ValueError as exc:  # null bytes
        return [Reason("syntax", file, 0, f"not valid Python: {exc}")]
    scanner = _Scanner(file, banned, allowed)
    scanner.visit(tree)
    reasons = scanner.reasons
    if file == SKILL and not any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                                 for n in tree.body):
        reasons.append(Reason("no-function", file, 0, "skill.py defines no function"))
    if file == TESTS and not any(isinstance(n, ast.Assert) for n in ast.walk(tree)):
        reasons.append(Reason("no-asserts", file, 0, "test_skill.py has no assert"))
    if file == EXAMPLE and not any(isinstance(n, ast.Call) for n in ast.walk(tree)):
        reasons.append(Reason("no-example", file, 0, "example.py makes no call"))
    return reasons


def body_lines(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip())


def scan_files(files: dict[str, str], banned: Iterable[str] = (), allowed: Iterable[str] = (),
               max_body_lines: int = 80) -> list[Reason]:
    """Scan skill.py, test_skill.py and example.py (SPEC §5 step 1)."""
    reasons: list[Reason] = []
    banned = list(banned)
    for file in FILES:
        source = files.get(file)
        if source is None or not source.strip():
            reasons.append(Reason("missing-file", file, 0, f"a code skill needs {file}"))
            continue
        reasons += scan_source(file, source, banned, allowed)
    code = files.get(SKILL) or ""
    count = body_lines(code)
    if count > max_body_lines:
        over = [i for i, line in enumerate(code.splitlines(), 1) if line.strip()][max_body_lines]
        reasons.append(Reason("body-too-long", SKILL, over,
                              f"{count} non-blank lines; the limit is {max_body_lines} "
                              "(verify.max_body_lines)"))
    order = (*FILES, *sorted({r.file for r in reasons} - set(FILES)))
    return sorted(set(reasons), key=lambda r: (order.index(r.file), r.line, r.rule, r.message))


def folder_reasons(folder: Path) -> list[Reason]:
    """What is in a code skill folder on disk besides SKILL.md and the three files
    (tracked, untracked or ignored alike): each is refused, naming it. Python could load
    another module, a package, ``__pycache__``, a ``.pth`` or ``sitecustomize``."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    reasons = []
    for entry in entries:
        name = entry.name
        if name in FOLDER_FILES and entry.is_file(follow_symlinks=False):
            continue
        if name in FOLDER_FILES:
            what = "is not a regular file"
        elif entry.is_dir(follow_symlinks=False):
            what = "is a folder (a package or __pycache__ Python could load)" \
                if name == "__pycache__" or name.isidentifier() else "is a folder"
        elif name.endswith((".py", ".pyc", ".pyo", ".pth", ".so", ".pyd")) \
                or name.split(".")[0] in ("sitecustomize", "usercustomize"):
            what = "is code Python could load instead of or beside the skill"
        else:
            what = "is not part of a code skill"
        reasons.append(Reason("extra-file", name, 0,
                              f"{what}; a code skill folder holds only "
                              f"{', '.join(FOLDER_FILES)}"))
    return reasons
