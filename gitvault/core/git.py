"""The only module that talks to git.

It drives the ``git`` command line directly rather than through GitPython:
GitPython's import alone costs ~190 ms (it would dominate every command's time)
and its ``Repo.git`` wrapper runs the same subprocesses. Every call here is one
``git`` process with a fixed environment; nothing leaks.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from gitvault.core import gitlock
from gitvault.core.clock import now
from gitvault.core.paths import find_git_dir
from gitvault.errors import Conflict, GitError

TRAILER_PREFIX = "Gitvault-"
T = TypeVar("T")


@dataclass(frozen=True)
class Commit:
    sha: str
    date: str
    subject: str
    trailers: dict[str, str] = field(default_factory=dict)

    @property
    def op(self) -> str | None:
        return self.trailers.get("Gitvault-Op")

    @property
    def version(self) -> int | None:
        value = self.trailers.get("Gitvault-Version", "")
        return int(value) if value.isascii() and value.isdigit() else None


def _env(when: datetime | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("LC_ALL", "C")
    env["GIT_TERMINAL_PROMPT"] = "0"
    # git's own format, seconds since the epoch: git refuses ISO dates after 2099 and
    # misreads years below 1000; before 1970 it has no dates at all (clamped to 0).
    moment = when or now()
    stamp = f"@{max(0, int(moment.timestamp()))} +0000"
    env["GIT_AUTHOR_DATE"] = stamp
    env["GIT_COMMITTER_DATE"] = stamp
    return env


def _run(argv: list[str], env: dict[str, str],
         input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(argv, input=input, capture_output=True, env=env)
    except FileNotFoundError:
        raise GitError("git is not installed (gitvault needs the git command)") from None


def _failed(command: str, proc: subprocess.CompletedProcess[bytes]) -> GitError:
    """GitError with git's own message kept whole (its lines joined), so the reason and
    the hint it gives both reach the user."""
    lines = [line.strip() for line in proc.stderr.decode("utf-8", "replace").splitlines()]
    detail = " ".join(line for line in lines if line) or f"exit {proc.returncode}"
    error = GitError(f"git {command} failed: {detail}")
    error.index_locked = "index.lock" in detail and "File exists" in detail
    return error


def git(root: Path, *args: str, input: bytes | None = None, check: bool = True,
        when: datetime | None = None, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[bytes]:
    """Run ``git -C root args`` (``env``: variables to add); a failure raises GitError
    with git's own message."""
    proc = _run(["git", "-C", str(root), *args], {**_env(when), **(env or {})}, input)
    if check and proc.returncode != 0:
        raise _failed(_command(args), proc)
    return proc


def _command(args: Sequence[str]) -> str:
    """The git command of ``args`` (``commit`` of ``-c user.name=x commit ...``)."""
    rest = list(args)
    while len(rest) > 2 and rest[0] == "-c":
        rest = rest[2:]
    return rest[0] if rest else "git"


def config_value(git_dir: Path | None, key: str) -> str | None:
    """``git config --get key`` as git itself reads it for the repository whose git dir
    is ``git_dir`` (a linked worktree's own one included): system and global config
    (``GIT_CONFIG_GLOBAL``, ``GIT_CONFIG_NOSYSTEM``), includes, ``-c`` of a calling git,
    the repository's and the worktree's config. ``git_dir`` None: outside any
    repository (system and global only). None when the key is not set."""
    # An explicit git dir: no discovery, so safe.bareRepository=explicit cannot refuse
    # it; os.devnull is no repository, so git reads no repository config at all.
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0",
               GIT_DIR=str(git_dir) if git_dir is not None else os.devnull)
    proc = _run(["git", "config", "--get", key], env)
    if proc.returncode == 1:
        return None
    if proc.returncode != 0:
        raise _failed("config", proc)
    return proc.stdout.decode("utf-8", "replace").strip()


def out(root: Path, *args: str) -> str:
    return git(root, *args).stdout.decode("utf-8", "replace")


def work_tree(path: Path) -> Path | None:
    """The top of the git work tree containing ``path``, or None."""
    proc = git(path, "rev-parse", "--show-toplevel", check=False)
    if proc.returncode != 0:
        return None
    return Path(proc.stdout.decode().strip())


def is_ignored(root: Path, path: Path) -> bool:
    """Whether the repository at ``root`` ignores ``path``."""
    return git(root, "check-ignore", "-q", str(path), check=False).returncode == 0


def init_repo(path: Path) -> None:
    git(path, "init", "-q", "-b", "main")


def has_commits(root: Path) -> bool:
    return git(root, "rev-parse", "-q", "--verify", "HEAD", check=False).returncode == 0


def _identity_args(root: Path) -> list[str]:
    """``-c user.name/email`` for what the user has not configured (fresh machines, CI)."""
    proc = git(root, "config", "--get-regexp", r"^user\.(name|email)$", check=False)
    have = {line.split(" ", 1)[0] for line in proc.stdout.decode().splitlines()}
    args: list[str] = []
    for key, env_key, fallback in (("user.name", "GIT_AUTHOR_NAME", "gitvault"),
                                   ("user.email", "GIT_AUTHOR_EMAIL", "gitvault@localhost")):
        if key not in have and not os.environ.get(env_key):
            args += ["-c", f"{key}={fallback}"]
    return args


def format_message(subject: str, trailers: dict[str, str], body: str = "") -> str:
    parts = [subject.strip()]
    if body.strip():
        parts.append(body.strip())
    if trailers:
        parts.append("\n".join(f"{TRAILER_PREFIX}{k}: {v}" for k, v in trailers.items()))
    return "\n\n".join(parts) + "\n"


def commit_paths(root: Path, paths: Sequence[str], subject: str,
                 trailers: dict[str, str], body: str = "", verify: bool = True) -> str | None:
    """Stage and commit exactly ``paths`` (relative to root) with trailers, holding the
    git lock (SPEC §3). On a failure the index is put back for those paths (nothing is
    left half-staged) and GitError carries git's whole message; git's ``index.lock``
    held by another git process is waited for within the lock's budget, then Conflict.

    Other staged changes of the user are left alone. Returns the new commit's sha,
    or None when those paths hold no change.
    """
    git_dir = find_git_dir(root)
    with gitlock.held(git_dir):
        return _retrying(lambda: _commit_paths(root, paths, subject, trailers, body, verify),
                         gitlock.budget(git_dir))


def _commit_paths(root: Path, paths: Sequence[str], subject: str,
                  trailers: dict[str, str], body: str, verify: bool) -> str | None:
    addable, paths = _known(root, paths)
    if not paths:
        return None
    base = ["HEAD"] if has_commits(root) else []
    try:
        if addable:
            git(root, "add", "-A", "--", *addable)
        staged = git(root, "diff", "--cached", "--quiet", *base, "--", *paths, check=False)
        if staged.returncode == 0:
            return None
        message = format_message(subject, trailers, body)
        hooks, env = ([], None) if verify else _own_commit_hooks(root)
        args = [*_identity_args(root), "commit", "-q", "--no-gpg-sign", *hooks, "-F", "-",
                "--only", "--", *paths]
        git(root, *args, input=message.encode("utf-8"), env=env)
    except GitError:
        if base:  # unstage what this call staged; paths HEAD lacks leave the index too
            git(root, "reset", "-q", "--", *paths, check=False)
        else:
            git(root, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", *paths,
                check=False)
        raise
    return out(root, "rev-parse", "HEAD").strip()


def _own_commit_hooks(root: Path) -> tuple[list[str], dict[str, str] | None]:
    """(commit arguments, extra environment) for a commit of content gitvault checked
    itself: ``--no-verify``, unless the user's own hook is chained behind the shim as
    ``pre-commit.legacy``; then the hooks run, the shim runs that hook and skips
    gitvault's checks (``GITVAULT_HOOK_CHECKS=skip``), so the user's hook is never
    bypassed."""
    where = out(root, "rev-parse", "--git-path", "hooks/pre-commit.legacy").strip()
    legacy = Path(where) if Path(where).is_absolute() else root / where
    if legacy.is_file() and os.access(legacy, os.X_OK):
        return [], {"GITVAULT_HOOK_CHECKS": "skip"}
    return ["--no-verify"], None


def _retrying(step: Callable[[], T], wait_s: float) -> T:
    """Run ``step``; while git's ``index.lock`` is held by a git process of someone
    else, try again for up to ``wait_s`` seconds, then raise Conflict."""
    import time

    deadline = time.monotonic() + wait_s
    pause = 0.01
    while True:
        try:
            return step()
        except GitError as exc:
            if not exc.index_locked:
                raise
            if time.monotonic() >= deadline:
                raise Conflict(f"{exc} (another git process is using the repository; "
                               "nothing was changed: try again)") from None
            time.sleep(pause)
            pause = min(pause * 2, 0.2)


def pull(root: Path, remote: str = "origin", branch: str = "main") -> None:
    """Fetch and merge ``remote/branch`` (a merge commit when needed, with an identity
    even where the user has none configured)."""
    _not_an_option(remote, branch)
    with gitlock.held(find_git_dir(root)):
        git(root, *_identity_args(root), "pull", "-q", "--no-rebase", "--no-edit", remote, branch)


def push(root: Path, remote: str = "origin", branch: str = "main") -> None:
    _not_an_option(remote, branch)
    git(root, "push", "-q", remote, f"HEAD:{branch}")


def _not_an_option(*values: str) -> None:
    """A remote or branch name that git would read as an option is refused."""
    for value in values:
        if not value or value.startswith("-"):
            raise GitError(f"not a git remote or branch name: {value!r}")


def _known(root: Path, paths: Sequence[str]) -> tuple[list[str], list[str]]:
    """(paths git add accepts: in the work tree or index; paths a commit accepts: those
    plus paths only HEAD has). Pathspecs that match nothing make git fail."""
    if not paths:
        return [], []
    if all((root / p).exists() for p in paths):
        return list(paths), list(paths)

    def matches(path: str, names: set[str]) -> bool:
        prefix = path.rstrip("/") + "/"
        return path in names or any(n.startswith(prefix) for n in names)

    index = set(out(root, "ls-files", "-z", "--", *paths).split("\0"))
    head: set[str] = set()
    if has_commits(root):
        head = set(out(root, "ls-tree", "-r", "-z", "--name-only", "HEAD", "--",
                       *paths).split("\0"))
    addable = [p for p in paths if (root / p).exists() or matches(p, index)]
    committable = [p for p in paths if p in addable or matches(p, head)]
    return addable, committable


def move(root: Path, src: str, dst: str) -> None:
    """``git mv`` (falls back to a plain rename for files git does not track)."""
    Path(root / dst).parent.mkdir(parents=True, exist_ok=True)
    with gitlock.held(find_git_dir(root)):
        proc = git(root, "mv", "-k", src, dst, check=False)
    if not (root / dst).exists():
        os.replace(root / src, root / dst)
    elif proc.returncode != 0 and (root / src).exists():
        raise GitError(f"git mv {src} {dst} failed")


_SEP_FIELD, _SEP_RECORD = "\x1f", "\x1e"


def log(root: Path, paths: Iterable[str], *, rev: str = "HEAD") -> list[Commit]:
    """Commits touching ``paths``, newest first, with their Gitvault trailers."""
    if not has_commits(root):
        return []
    fmt = f"%H{_SEP_FIELD}%aI{_SEP_FIELD}%s{_SEP_FIELD}%(trailers:only,unfold){_SEP_RECORD}"
    text = out(root, "log", f"--format={fmt}", rev, "--", *paths)
    commits = []
    for chunk in text.split(_SEP_RECORD):
        chunk = chunk.strip("\n")
        if not chunk:
            continue
        sha, date, subject, trailer_text = [*chunk.split(_SEP_FIELD), "", "", ""][:4]
        trailers = {}
        for line in trailer_text.splitlines():
            key, sep, value = line.partition(":")
            if sep and key.startswith(TRAILER_PREFIX):
                trailers[key.strip()] = value.strip()
        if date.endswith("+00:00"):
            date = date[:-6] + "Z"
        commits.append(Commit(sha=sha, date=date, subject=subject, trailers=trailers))
    return commits


def show_file(root: Path, rev: str, path: str) -> bytes | None:
    """The content of ``path`` at ``rev``, or None if it did not exist there."""
    proc = git(root, "show", f"{rev}:{path}", check=False)
    return proc.stdout if proc.returncode == 0 else None


def changed_paths(root: Path, paths: Iterable[str]) -> list[tuple[str, str]]:
    """``git status --porcelain`` for ``paths``: (status, path) pairs, untracked listed
    file by file."""
    text = out(root, "status", "--porcelain", "-uall", "-z", "--", *paths)
    entries = [e for e in text.split("\0") if e]
    result = []
    skip = False
    for entry in entries:
        if skip:
            skip = False
            continue
        status, path = entry[:2], entry[3:]
        if status[0] in "RC":
            skip = True  # the next entry is the rename source
        result.append((status, path))
    return result


def added_lines(root: Path, path: str) -> int:
    """Lines ``path`` has beyond its committed version (all lines if untracked)."""
    full = root / path
    try:
        data = full.read_bytes()
    except OSError:
        return 0
    committed = show_file(root, "HEAD", path) if has_commits(root) else None
    base = committed.count(b"\n") if committed else 0
    return max(data.count(b"\n") - base, 0)


def git_processes_running() -> bool:
    """True if any git process is running on this machine (for stale index.lock)."""
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        return True
    for entry in proc_dir.iterdir():
        if entry.name.isdigit():
            try:
                comm = (entry / "comm").read_text().strip()
            except OSError:
                continue
            if comm == "git" or comm.startswith("git-"):
                return True
    return False


MAX_LS_REMOTE_BYTES = 32 << 20  # what ls-remote may print: a remote's refs, not a flood


def ls_remote(root: Path, remote: str, pattern: str, timeout: float) -> list[tuple[str, str]]:
    """``(sha, ref)`` of the refs of ``remote`` matching ``pattern`` (``git ls-remote``),
    within ``timeout`` seconds (the whole process group is killed after it). Transports
    that run programs (``ext::``) are refused, and so is a remote that looks like an
    option. Raises GitError naming what failed."""
    if not remote or remote.startswith("-"):
        raise GitError(f"not a git remote: {remote!r}")
    env = _env()
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    # The repository's own git dir, never git's discovery from ``root``: a vault folder
    # holding committed HEAD, objects/, refs/ and config would be read as a repository
    # whose config (protocol.ext.allow, credential helpers) came with a sync.
    env["GIT_DIR"] = _own_git_dir(root)
    allowed = [f"protocol.{name}.allow=always" for name in ("https", "http", "ssh", "git", "file")]
    args = ["git", "-c", "protocol.allow=never",
            *(arg for item in allowed for arg in ("-c", item)), "ls-remote", "--", remote, pattern]
    try:
        proc = subprocess.Popen(args, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, start_new_session=True)
    except FileNotFoundError:
        raise GitError("git is not installed (gitvault needs the git command)") from None
    try:
        stdout, stderr = communicate_capped(proc, None, timeout, MAX_LS_REMOTE_BYTES)
    except OutputTooLarge:
        raise GitError(f"git ls-remote {remote} advertised more than "
                       f"{MAX_LS_REMOTE_BYTES} bytes of refs") from None
    except subprocess.TimeoutExpired:  # its process group is killed
        raise GitError(f"git ls-remote {remote} gave no answer within {timeout:g} s") from None
    if proc.returncode != 0:
        lines = stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git ls-remote {remote} failed: {lines[-1] if lines else proc.returncode}")
    refs = []
    for line in stdout.decode("utf-8", "replace").splitlines():
        sha, _, ref = line.partition("\t")
        if ref:
            refs.append((sha.strip(), ref.strip()))
    return refs


def kill_group(proc: subprocess.Popen[bytes], *, drain: bool = True) -> None:
    """Kill a process started with ``start_new_session`` and all it started; reap it
    (reading what is left of its pipes, unless ``drain`` is False)."""
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.communicate() if drain else proc.wait()


class OutputTooLarge(Exception):
    """A program wrote more to stdout than :func:`communicate_capped` keeps."""


def communicate_capped(proc: subprocess.Popen[bytes], data: bytes | None, timeout: float,
                       limit: int) -> tuple[bytes, bytes]:
    """``proc.communicate(data, timeout)`` that keeps at most ``limit`` bytes of stdout
    (and the last 64 KiB of stderr): a program that floods its output has its process
    group killed (``proc`` started with ``start_new_session``) and OutputTooLarge is
    raised, as subprocess.TimeoutExpired is after ``timeout`` seconds."""
    import threading
    import time

    out: list[bytes] = []
    err = bytearray()
    flooded = threading.Event()

    def read_out() -> None:
        size = 0
        assert proc.stdout is not None
        while chunk := os.read(proc.stdout.fileno(), 65536):
            size += len(chunk)
            if size > limit:
                flooded.set()
                return
            out.append(chunk)

    def read_err() -> None:
        assert proc.stderr is not None
        while chunk := os.read(proc.stderr.fileno(), 65536):
            err.extend(chunk)
            del err[:-65536]

    def write_in() -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.write(data or b"")
            proc.stdin.close()
        except OSError:
            pass

    threads = [threading.Thread(target=read_out, daemon=True)]
    if proc.stderr is not None:
        threads.append(threading.Thread(target=read_err, daemon=True))
    if proc.stdin is not None:
        threads.append(threading.Thread(target=write_in, daemon=True))
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    while proc.poll() is None or threads[0].is_alive():
        if flooded.is_set() or time.monotonic() > deadline:
            break
        threads[0].join(0.05)
    if flooded.is_set() or proc.poll() is None or threads[0].is_alive():
        kill_group(proc, drain=False)
        _close_pipes(proc, threads)
        if flooded.is_set():
            raise OutputTooLarge(limit)
        raise subprocess.TimeoutExpired(proc.args, timeout)
    _close_pipes(proc, threads)
    return b"".join(out), bytes(err)


def _close_pipes(proc: subprocess.Popen[bytes], threads: list[Any]) -> None:
    for thread in threads:
        thread.join(1)
    if not any(thread.is_alive() for thread in threads):  # else a child still holds them
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def config_flag(root: Path, key: str) -> bool:
    """Whether the clone's git config (local, global or system; never a committed file)
    sets boolean ``key`` to true."""
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_DIR=_own_git_dir(root))
    proc = _run(["git", "config", "--type=bool", "--get", key], env)
    return proc.returncode == 0 and proc.stdout.strip() == b"true"


def clone_allows(root: Path, env: str, key: str) -> bool:
    """Whether this clone opts in: the environment variable ``env`` is 1, true or yes,
    or its git config sets boolean ``key`` to true (never a committed file)."""
    if os.environ.get(env, "").lower() in ("1", "true", "yes"):
        return True
    return config_flag(root, key)


def _own_git_dir(root: Path) -> str:
    """The git dir of the work tree holding ``root`` (found by its ``.git``, as
    gitvault finds it), or os.devnull outside any: so git reads no repository config
    from committed files that look like a bare repository."""
    from gitvault.core.paths import find_git_dir

    found = find_git_dir(Path(root).resolve())
    return str(found) if found is not None else os.devnull


def commit_on_branch(root: Path, branch: str, files: dict[str, bytes], subject: str,
                     trailers: dict[str, str], body: str = "") -> str:
    """Commit ``files`` (paths relative to root → content) on a new branch ``branch``
    whose parent is HEAD, with git plumbing only (hash-object, a temporary index,
    write-tree, commit-tree, update-ref): the user's work tree, index and HEAD are
    untouched. Refuses a branch that exists. Returns the commit's sha."""
    import tempfile

    ref = f"refs/heads/{branch}"
    if git(root, "check-ref-format", ref, check=False).returncode != 0:
        raise GitError(f"not a valid branch name: {branch!r}")
    parent = out(root, "rev-parse", "--verify", "HEAD^{commit}").strip()
    git_dir = Path(out(root, "rev-parse", "--absolute-git-dir").strip())
    with tempfile.TemporaryDirectory(dir=git_dir, prefix="gitvault-index-") as tmp:
        env = {**_env(), "GIT_INDEX_FILE": str(Path(tmp) / "index")}

        def run(*args: str, input: bytes | None = None) -> str:
            proc = _run(["git", "-C", str(root), *args], env, input)
            if proc.returncode != 0:
                raise _failed(args[0] if not args[0].startswith("-") else args[2], proc)
            return proc.stdout.decode("utf-8", "replace").strip()

        run("read-tree", parent)
        for path, data in files.items():
            blob = run("hash-object", "-w", "--stdin", input=data)
            run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
        tree = run("write-tree")
        message = format_message(subject, trailers, body)
        sha = run(*_identity_args(root), "commit-tree", tree, "-p", parent, "-F", "-",
                  input=message.encode("utf-8"))
        run("update-ref", ref, sha, "0" * 40)  # create only: an existing branch is refused
    return sha


def ref_exists(root: Path, ref: str) -> bool:
    return git(root, "rev-parse", "-q", "--verify", ref, check=False).returncode == 0
