"""Steps 2 and 3 of the verification gate (SPEC §5): run skill code in an OS sandbox.

The code runs in a separate process as a non-root user (uid 65534) in new user,
network, PID, IPC and mount namespaces, with only a fresh temp folder writable, a
scrubbed environment, rlimits on CPU, address space, file size, open files and
processes (none may be started), a wall-clock timeout and a kill of the whole process
group afterwards.

- bubblewrap, when the caller is not root: ``bwrap --unshare-user --uid 65534``.
- bubblewrap, when the caller is root (sessions and CI here): bwrap builds the mount,
  network and PID namespaces, then ``setpriv`` drops to the real uid 65534 with no
  capabilities and ``unshare --user`` enters a user namespace that maps only 65534, so
  the skill is never root, not even root mapped into a namespace.
- ``unshare`` fallback (root only, when bwrap is missing): network, PID, IPC and mount
  namespaces, the same drop to uid 65534 and a user namespace; the file system is then
  protected by permissions only.
- ``none``: only with ``--unsafe-no-sandbox``; still never as root, with the rlimits,
  timeout and process-group kill.

``GITVAULT_SANDBOX=bwrap|unshare|none`` forces a method (``none`` makes the gate refuse
unless ``--unsafe-no-sandbox`` is given).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitvault.core.config import defaults
from gitvault.core.git import kill_group

NOBODY = 65534
INSIDE = "/sandbox"
METHODS = ("bwrap", "unshare", "none")
OUTPUT_LIMIT = 64 * 1024  # bytes of stdout/stderr kept for the reasons

# Runs first inside the sandbox: limits the process, then runs the script as __main__.
LAUNCHER = """\
import resource as r, runpy, sys
def cap(kind, value):
    r.setrlimit(kind, (value, value))
cap(r.RLIMIT_CORE, 0)
cap(r.RLIMIT_CPU, {cpu})
cap(r.RLIMIT_AS, {memory})
cap(r.RLIMIT_FSIZE, {fsize})
cap(r.RLIMIT_NOFILE, {nofile})
cap(r.RLIMIT_NPROC, 0)
sys.argv = [{script!r}]
sys.path.insert(0, {folder!r})
runpy.run_path({script!r}, run_name="__main__")
"""


@dataclass(frozen=True)
class Limits:
    """What one sandboxed run may use: gitvault.yaml's sandbox section, and verify's
    timeout."""

    memory_mb: int
    file_size_mb: int
    open_files: int
    timeout_s: int

    @classmethod
    def from_config(cls, verify: Any, sandbox: Any) -> Limits:
        return cls(sandbox.memory_mb, sandbox.file_size_mb, sandbox.open_files, verify.timeout_s)


@dataclass
class Run:
    """What one sandboxed run did."""

    script: str
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float
    method: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


_detected: dict[str, str | None] = {}


def _interpreter_paths() -> list[str]:
    """Folders the interpreter needs, read-only inside the sandbox."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             str(Path(sys.executable).parent), str(Path(os.path.realpath(sys.executable)).parent.parent)}
    system = ("/usr", "/lib", "/lib64", "/bin", "/sbin")
    return sorted(p for p in paths if p and not p.startswith(tuple(s + "/" for s in system))
                  and p not in system and p != "/")


def _bwrap_args(folder: Path, as_root: bool) -> list[str]:
    args = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--clearenv"]
    if not as_root:
        args[1:1] = ["--unshare-user", "--disable-userns", "--uid", str(NOBODY),
                     "--gid", str(NOBODY)]
    for system in ("/usr", "/lib", "/lib64", "/bin", "/sbin"):
        args += ["--ro-bind-try", system, system]
    for etc in ("/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives"):
        args += ["--ro-bind-try", etc, etc]
    made: set[str] = {"/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc"}
    for path in _interpreter_paths():
        for parent in reversed(Path(path).parents):
            if str(parent) != "/" and str(parent) not in made:
                args += ["--perms", "0755", "--dir", str(parent)]
                made.add(str(parent))
        args += ["--ro-bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev", "--bind", str(folder), INSIDE,
             "--chdir", INSIDE]
    for key, value in _env().items():
        args += ["--setenv", key, value]
    return args


def _env() -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": INSIDE, "TMPDIR": INSIDE, "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}


def _drop_to_nobody() -> list[str]:
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
            "--no-new-privs", "--bounding-set=-all", "--inh-caps=-all", "--",
            "unshare", "--user", f"--map-user={NOBODY}", f"--map-group={NOBODY}", "--"]


def command(method: str, folder: Path, inner: list[str]) -> tuple[list[str], str]:
    """The argv running ``inner`` with ``method`` and the folder it sees as its own."""
    as_root = os.geteuid() == 0
    if method == "bwrap":
        prefix = _bwrap_args(folder, as_root)
        return [*prefix, *(_drop_to_nobody() if as_root else []), *inner], INSIDE
    if method == "unshare":
        return ["unshare", "--net", "--pid", "--ipc", "--uts", "--mount", "--fork",
                "--kill-child", "--mount-proc", *_drop_to_nobody(), *inner], str(folder)
    return inner, str(folder)


def _preexec_none() -> None:
    """No sandbox: still never root."""
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)


def _spawn(argv: list[str], cwd: Path, method: str, out: Path, err: Path,
           timeout: float) -> tuple[int, bool]:
    with open(out, "wb") as fout, open(err, "wb") as ferr:
        proc = subprocess.Popen(
            argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=fout, stderr=ferr,
            env=_env(), start_new_session=True, close_fds=True,
            preexec_fn=_preexec_none if method == "none" else None)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            kill_group(proc)  # whatever the tests started, even after a clean exit
    return proc.returncode, timed_out


def _tail(path: Path) -> str:
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(size - OUTPUT_LIMIT, 0))
        return fh.read().decode("utf-8", "replace")


def prepare(files: dict[str, str]) -> Path:
    """A fresh folder holding the skill's files, owned by the sandbox user when root."""
    folder = Path(tempfile.mkdtemp(prefix="gitvault-gate-"))
    for name, text in files.items():
        (folder / name).write_bytes(text.encode("utf-8", "surrogateescape"))
    if os.geteuid() == 0:
        os.chown(folder, NOBODY, NOBODY)
    folder.chmod(0o700)
    return folder


def run(folder: Path, script: str, limits: Limits, method: str) -> Run:
    """Run ``script`` (a file in ``folder``) in the sandbox ``method``."""
    inner_folder = INSIDE if method == "bwrap" else str(folder)
    launcher = LAUNCHER.format(cpu=max(limits.timeout_s, 1) + 1,
                               memory=limits.memory_mb * 1024 * 1024,
                               fsize=limits.file_size_mb * 1024 * 1024,
                               nofile=max(limits.open_files, 16), script=script,
                               folder=inner_folder)
    inner = [sys.executable, "-I", "-B", "-c", launcher]
    argv, _ = command(method, folder, inner)
    logs = Path(tempfile.mkdtemp(prefix="gitvault-gate-out-"))
    started = time.monotonic()
    try:
        code, timed_out = _spawn(argv, folder, method, logs / "out", logs / "err",
                                 float(limits.timeout_s))
        return Run(script, code, _tail(logs / "out"), _tail(logs / "err"), timed_out,
                   time.monotonic() - started, method)
    finally:
        shutil.rmtree(logs, ignore_errors=True)


def _probe(method: str) -> bool:
    folder = prepare({"probe.py": "import os\nassert os.getuid() != 0\n"})
    try:
        config = defaults()
        result = run(folder, "probe.py", Limits.from_config(config.verify, config.sandbox), method)
        return result.ok
    except OSError:
        return False
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def detect() -> str | None:
    """The sandbox method that works here ("bwrap", "unshare"), or None."""
    forced = os.environ.get("GITVAULT_SANDBOX", "").strip().lower()
    if forced == "none":
        return None
    if forced in _detected:
        return _detected[forced]
    candidates = [forced] if forced in ("bwrap", "unshare") else ["bwrap", "unshare"]
    found = None
    for method in candidates:
        if method == "unshare" and os.geteuid() != 0:
            continue  # without root to drop from, unshare cannot hide the user's files
        tools = ["bwrap"] if method == "bwrap" else ["unshare"]
        if os.geteuid() == 0:
            tools += ["setpriv", "unshare"]
        if all(shutil.which(t) for t in tools) and _probe(method):
            found = method
            break
    _detected[forced] = found
    return found
