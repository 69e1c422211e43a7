"""Shared fixtures: real git repositories in temp folders and the real ``gitvault``
command (in this interpreter, or as a real process where a test is about processes),
in an environment with no user git config (like a fresh machine or CI)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    @property
    def err_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]


def isolated_env(tmp: Path) -> dict[str, str]:
    """The environment of a CLI run under ``tmp``: its own HOME, no user or system git
    config, no GITVAULT_* settings from outside, node ``test-node``."""
    home = tmp / "home"
    home.mkdir()
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("GITVAULT_", "GIT_"))}
    base.update({
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GITVAULT_NODE": "test-node",
        "PYTHONPATH": str(REPO),
    })
    return base


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return isolated_env(tmp_path)


# GITVAULT_TESTS_IN_PROCESS=0: the runners' default is a real process (see Runner).
IN_PROCESS = os.environ.get("GITVAULT_TESTS_IN_PROCESS", "1") != "0"

# How a gitvault process's standard streams decode and encode (they follow the locale
# of the environment the runner's env dict inherits; read before any test swaps them).
_STREAM_ERRORS = {name: getattr(getattr(sys, f"__{name}__"), "errors", None) or "strict"
                  for name in ("stdin", "stdout", "stderr")}


@contextmanager
def _standard_fds(data: bytes) -> Iterator[list[bytes]]:
    """File descriptors 0, 1 and 2 on temp files for the duration (stdin holding
    ``data``), so what the CLI's child processes inherit is captured as in a process
    with pipes for stdio. The original descriptors come back afterwards, and the list
    yielded then holds what was written to 1 and 2."""
    captured: list[bytes] = []
    with ExitStack() as stack:
        files = [stack.enter_context(tempfile.TemporaryFile()) for _ in range(3)]
        files[0].write(data)
        files[0].seek(0)
        saved = [os.dup(fd) for fd in range(3)]
        try:
            for fd, file in enumerate(files):
                os.dup2(file.fileno(), fd)
            yield captured
        finally:
            for fd, original in enumerate(saved):
                os.dup2(original, fd)
                os.close(original)
            for file in files[1:]:
                file.seek(0)
                captured.append(file.read())


def _stream(fd: int) -> io.TextIOWrapper:
    """The ``sys`` stream over descriptor ``fd``, as under PYTHONUNBUFFERED: text and
    ``.buffer`` writes reach the descriptor at once, in the order made, interleaved with
    the output of child processes; ``isatty()`` is False and there is no terminal size,
    as for a pipe."""
    name = ("stdin", "stdout", "stderr")[fd]
    raw = io.FileIO(fd, "r" if fd == 0 else "w", closefd=False)
    binary = io.BufferedReader(raw) if fd == 0 else raw
    return io.TextIOWrapper(binary, encoding="utf-8", errors=_STREAM_ERRORS[name],
                            write_through=True)


def _exit_code(exc: SystemExit, err: io.TextIOWrapper) -> int:
    """The exit status a process ending with ``exc`` has (as Python's own handling)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    err.write(f"{exc.code}\n")
    return 1


def _reset_process_state() -> None:
    """What a fresh process starts with, for gitvault's module state that outlives one
    call in an interpreter (harmless in a process, wrong in a long-lived caller):

    - ``gitvault.core.records._last_id``: ids of one millisecond count up from the
      last id made, so with GITVAULT_NOW fixed successive runs would make ids in
      order that separate processes make in random order.
    """
    from gitvault.core import records

    if hasattr(records, "_last_id"):
        records._last_id[:] = [-1, 0]


def _process_warning_filters() -> None:
    """Python's default warning filters and display on stderr (pytest's would record a
    warning instead of letting it reach stderr, where a process shows it)."""
    warnings.resetwarnings()
    for category in (ResourceWarning, ImportWarning, PendingDeprecationWarning,
                     DeprecationWarning):
        warnings.simplefilter("ignore", category)
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
    warnings.showwarning = _show_warning


def _show_warning(message: Warning | str, category: type[Warning], filename: str,
                  lineno: int, file: Any = None, line: str | None = None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


class Runner:
    """Runs the real ``gitvault`` CLI in ``cwd`` with the environment ``env``.

    By default in this interpreter: ``gitvault.cli.main:main`` (what the console script
    and ``python -m gitvault`` call) with ``sys.argv``, ``os.environ``, the working
    folder and the standard streams (descriptors 0-2 included, which child processes
    inherit) set as a process would have them, all restored afterwards; module state
    a fresh process would not have is reset first; an uncaught exception is exit 1 with
    its traceback on stderr, as a process shows it.

    With ``subprocess=True``, ``python -m gitvault`` in a real process: for tests about
    processes (several at once, signals, timing, import costs, settings read at
    interpreter start such as ``PYTHONIOENCODING``). Without ``input`` both give an
    empty stdin.

    ``process()`` gives the subprocess twin of an in-process runner: it shares the
    env dict and follows the cwd. GITVAULT_TESTS_IN_PROCESS=0 in pytest's environment
    makes processes the default: every CLI call of the suite then runs in a real
    process, to check that no test passes only in-process.
    """

    def __init__(self, env: dict[str, str], cwd: Path, *,
                 subprocess: bool = not IN_PROCESS) -> None:
        self.env = env
        self._cwd: Path | None = cwd
        self.subprocess = subprocess
        self._twin: Runner | None = None

    @property
    def cwd(self) -> Path:
        if self._cwd is None:
            assert self._twin is not None
            return self._twin.cwd
        return self._cwd

    @cwd.setter
    def cwd(self, value: Path) -> None:
        self._cwd = value

    def process(self) -> Runner:
        """A runner of real processes with this runner's env dict and cwd."""
        return self._linked(subprocess=True)

    def in_process(self) -> Runner:
        """A runner in this interpreter with this runner's env dict and cwd (for tests
        of the in-process run itself, whatever GITVAULT_TESTS_IN_PROCESS says)."""
        return self._linked(subprocess=False)

    def _linked(self, subprocess: bool) -> Runner:
        twin = Runner(self.env, self.cwd, subprocess=subprocess)
        twin._cwd, twin._twin = None, self
        return twin

    def __call__(self, *args: str, input: str | bytes | None = None, cwd: Path | None = None,
                 env: dict[str, str] | None = None) -> Result:
        data = input.encode() if isinstance(input, str) else input
        run = self._run_process if self.subprocess else self._run_here
        return run(list(args), data, cwd or self.cwd, {**self.env, **(env or {})})

    @staticmethod
    def _run_process(args: list[str], data: bytes | None, cwd: Path,
                     env: dict[str, str]) -> Result:
        stdin = subprocess.DEVNULL if data is None else None  # empty, as in-process
        proc = subprocess.run([sys.executable, "-m", "gitvault", *args], input=data,
                              stdin=stdin, capture_output=True, cwd=cwd, env=env, timeout=120)
        return Result(proc.returncode, proc.stdout.decode("utf-8", "replace"),
                      proc.stderr.decode("utf-8", "replace"))

    @staticmethod
    def _run_here(args: list[str], data: bytes | None, cwd: Path,
                  env: dict[str, str]) -> Result:
        from gitvault.cli.main import main as entry

        main: Callable[[], object] = entry  # may return the code, or exit with it

        saved_env = dict(os.environ)
        saved_cwd = os.getcwd()
        saved_argv = sys.argv
        saved_tempdir = tempfile.tempdir
        names = ("stdin", "stdout", "stderr")
        saved_streams = {n: (getattr(sys, n), getattr(sys, f"__{n}__")) for n in names}
        with _standard_fds(data or b"") as captured:
            streams = [_stream(fd) for fd in range(3)]
            try:
                os.environ.clear()
                os.environ.update(env)
                os.chdir(cwd)
                tempfile.tempdir = None  # found again from this env's TMPDIR, as a process does
                sys.argv = [str(REPO / "gitvault" / "__main__.py"), *args]
                for name, stream in zip(names, streams, strict=True):
                    setattr(sys, name, stream)
                    setattr(sys, f"__{name}__", stream)
                _reset_process_state()
                with warnings.catch_warnings():
                    _process_warning_filters()
                    try:
                        # as the console script: sys.exit(main())
                        code = _exit_code(SystemExit(main()), streams[2])
                    except SystemExit as exc:
                        code = _exit_code(exc, streams[2])
                    except Exception:
                        streams[2].write(traceback.format_exc())
                        code = 1
                for stream in streams:
                    stream.flush()
            finally:
                for name, (current, original) in saved_streams.items():
                    setattr(sys, name, current)
                    setattr(sys, f"__{name}__", original)
                sys.argv = saved_argv
                tempfile.tempdir = saved_tempdir
                os.chdir(saved_cwd)
                os.environ.clear()
                os.environ.update(saved_env)
        out, err = captured
        return Result(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))

    def ok(self, *args: str, **kw: Any) -> Result:
        result = self(*args, **kw)
        assert result.code == 0, f"gitvault {' '.join(args)} -> {result.code}\n{result.err}"
        return result

    def git(self, *args: str, cwd: Path | None = None) -> str:
        proc = subprocess.run(["git", *args], capture_output=True, cwd=cwd or self.cwd,
                              env=self.env, check=True)
        return proc.stdout.decode()


@pytest.fixture
def gv(env: dict[str, str], tmp_path: Path) -> Runner:
    """The CLI run in this interpreter, from an empty folder that is not a vault."""
    work = tmp_path / "work"
    work.mkdir()
    return Runner(env, work)


@pytest.fixture
def gv_proc(gv: Runner) -> Runner:
    """The CLI as a real process, with ``gv``'s env and folder (``vault`` moves both)."""
    return gv.process()


@pytest.fixture
def vault(gv: Runner, tmp_path: Path) -> Path:
    """A fresh vault (its own git repository) that ``gv`` runs in."""
    root = tmp_path / "vault"
    gv.ok("init", str(root))
    gv.cwd = root
    return root


def vault_runner(tmp: Path) -> Runner:
    """The CLI in a fresh vault under ``tmp``: for module-scoped fixtures whose tests
    share one vault."""
    gv = Runner(isolated_env(tmp), tmp)
    gv.ok("init", str(tmp / "vault"))
    gv.cwd = tmp / "vault"
    return gv


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root except .git internals that git itself rewrites freely."""
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith(".git/"):
            files[rel] = path.read_bytes()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True)
    files[".git/HEAD@"] = head.stdout
    status = subprocess.run(["git", "status", "--porcelain", "-uall"], cwd=root,
                            capture_output=True)
    files[".git/status@"] = status.stdout
    return files
