"""Every path a vault uses, in one small value class; vault discovery; node ids."""

from __future__ import annotations

import os
import re
from pathlib import Path

from gitvault.errors import InvalidInput, NotFound

TYPE_CHECKING = False  # typing and datetime are not imported at run time: record-run
if TYPE_CHECKING:
    from datetime import datetime

CONFIG_NAME = "gitvault.yaml"
SKILLS_DIR = "skills"
ARCHIVE_DIR = ".archive"  # skills/.archive/<name>/: archived skills, never deleted
REJECTED_DIR = ".rejected"  # skills/.rejected/<name>/: code skills the gate refused
LOGS_DIR = "logs"
STREAMS = ("runs", "events", "queue", "knowledge", "gate", "improvements", "health")
NODE_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_NODE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


class _Below:
    """A path of VaultLayout, computed when read: ``name`` below its root, or below
    another of its paths (``under``)."""

    __slots__ = ("name", "under")

    def __init__(self, name: str, under: str | None = None) -> None:
        self.name, self.under = name, under

    def __get__(self, layout: VaultLayout, owner: type | None = None) -> Path:
        base = layout.root if self.under is None else getattr(layout, self.under)
        return base / self.name


class VaultLayout:
    """The folders and files of one vault rooted at ``root`` (a plain class: this
    module is on the path of record-run, which must not pay for dataclasses)."""

    __slots__ = ("root",)

    def __init__(self, root: Path) -> None:
        self.root = root

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VaultLayout) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    def __repr__(self) -> str:
        return f"VaultLayout({self.root!r})"

    config = _Below(CONFIG_NAME)
    gitattributes = _Below(".gitattributes")
    skills = _Below(SKILLS_DIR)
    archive = _Below(ARCHIVE_DIR, "skills")
    rejected = _Below(REJECTED_DIR, "skills")
    logs = _Below(LOGS_DIR)

    def skill_dir(self, name: str, *, archived: bool = False) -> Path:
        return (self.archive if archived else self.skills) / name

    # Paths as git names them (relative to the work tree top, forward slashes), for code
    # that reads the index or history; ``vault_rel`` is the vault folder there ('' or '.'
    # when the vault is the top).
    @staticmethod
    def git_path(vault_rel: str, *parts: str) -> str:
        """``parts`` under the vault folder ``vault_rel``, as git names the path."""
        return "/".join([*([vault_rel] if vault_rel not in ("", ".") else []), *parts])

    @staticmethod
    def skill_git_dir(vault_rel: str, name: str, *, archived: bool = False) -> str:
        """``skills/<name>`` or ``skills/.archive/<name>`` as git names it."""
        return VaultLayout.git_path(vault_rel, SKILLS_DIR, *([ARCHIVE_DIR] if archived else []), name)

    def stream(self, stream: str) -> Path:
        if stream not in STREAMS:
            raise InvalidInput(f"unknown log stream {stream!r}")
        return self.logs / stream

    def log_file(self, stream: str, node: str, moment: datetime | str) -> Path:
        """Where ``node`` appends ``stream`` records written at ``moment`` (a datetime,
        or a record's ``ts`` text: its month is the folder)."""
        month = moment[:7] if isinstance(moment, str) else f"{moment.year:04d}-{moment.month:02d}"
        return self.stream(stream) / month / f"{node}.jsonl"

    @property
    def git_dir(self) -> Path | None:
        """The .git folder of the work tree holding the vault (None outside git)."""
        return find_git_dir(self.root)

    @property
    def cache(self) -> Path | None:
        """Derived state, never committed: ``.git/gitvault/``."""
        git_dir = self.git_dir
        return git_dir / "gitvault" if git_dir is not None else None

    def lock_file(self, name: str) -> Path:
        """The lock file ``name`` (``.git/gitvault/locks/<name>.lock``; a vault outside
        git keeps it in an untracked ``.gitvault-lock/`` folder of its own)."""
        return (self.cache or self.root / ".gitvault-lock") / "locks" / f"{name}.lock"

    def rel(self, path: Path) -> str:
        """``path`` relative to the vault root, with forward slashes."""
        return path.relative_to(self.root).as_posix()


class SymlinkRefused(InvalidInput):
    """A path below the vault root goes through a symlink (SPEC §1): never followed."""


NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)  # open no symlink
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NOFOLLOW


def _refused(root: str | os.PathLike[str], parts: list[str], upto: int) -> SymlinkRefused:
    shown = "/".join(parts[:upto + 1])
    return SymlinkRefused(f"{shown}: is a symlink; gitvault never follows symlinks under "
                          "skills/ or logs/")


def _parts_below(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> list[str]:
    top, full = os.fspath(root).rstrip("/") + "/", os.fspath(path)
    if full.startswith(top) and "/." not in full[len(top) - 1:] and "//" not in full:
        return full[len(top):].split("/")  # the usual case, without path arithmetic
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    parts = [p for p in rel.split(os.sep) if p not in ("", ".")]
    if not parts or parts[0] == "..":
        raise InvalidInput(f"{os.fspath(path)}: not inside {os.fspath(root)}")
    return parts


def open_below(root: str | os.PathLike[str], path: str | os.PathLike[str], flags: int,
               mode: int = 0o644, *, make_dirs: bool = False) -> int:
    """``os.open(path, flags)`` with no symlink followed anywhere below ``root``: each
    folder is opened relative to the one above it with ``O_NOFOLLOW`` (created first
    when ``make_dirs``), then the file itself. A symlink on the way is a
    SymlinkRefused (exit 2) naming it; other failures are the OSError of ``os.open``.
    A few syscalls per folder: cheap enough for record-run."""
    parts = _parts_below(root, path)
    try:
        return _walk(root, parts, flags, mode, make_dirs)
    except OSError as exc:  # name the whole path, as os.open(path) would
        if exc.filename == os.fspath(path):
            raise
        raise OSError(exc.errno, exc.strerror, os.fspath(path)) from None


def _walk(root: str | os.PathLike[str], parts: list[str], flags: int, mode: int,
          make_dirs: bool) -> int:
    fd = os.open(root, _DIR_FLAGS & ~getattr(os, "O_NOFOLLOW", 0))
    try:
        for index, part in enumerate(parts[:-1]):
            try:
                sub = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not make_dirs:
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                sub = _open_part(root, parts, index, _DIR_FLAGS, 0, fd)
            except OSError:
                sub = _open_part(root, parts, index, _DIR_FLAGS, 0, fd)
            os.close(fd)
            fd = sub
        return _open_part(root, parts, len(parts) - 1, flags | NOFOLLOW, mode, fd)
    finally:
        os.close(fd)


def _open_part(root: str | os.PathLike[str], parts: list[str], index: int, flags: int,
               mode: int, dir_fd: int) -> int:
    try:
        return os.open(parts[index], flags, mode, dir_fd=dir_fd)
    except OSError:
        if is_link(parts[index], dir_fd):
            raise _refused(root, parts, index) from None
        raise


def is_link(name: str, dir_fd: int | None = None) -> bool:
    """Whether ``name`` (relative to ``dir_fd``) is a symlink itself."""
    try:
        return (os.lstat(name, dir_fd=dir_fd).st_mode & 0o170000) == 0o120000
    except OSError:
        return False


def symlink_below(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> str | None:
    """The first part of ``path`` below ``root`` that is a symlink (relative, with
    forward slashes), or None; parts that do not exist end the walk."""
    here = os.path.abspath(root)
    parts = _parts_below(root, path)
    for index, part in enumerate(parts):
        here = os.path.join(here, part)
        try:
            st = os.lstat(here)
        except OSError:
            return None
        if (st.st_mode & 0o170000) == 0o120000:
            return "/".join(parts[:index + 1])
    return None


def refuse_symlinks(root: str | os.PathLike[str], *paths: str | os.PathLike[str]) -> None:
    """SymlinkRefused (exit 2) when any of ``paths`` goes through a symlink below
    ``root``: a writer calls it before it writes anything."""
    for path in paths:
        link = symlink_below(root, path)
        if link is not None:
            raise SymlinkRefused(f"{link}: is a symlink; gitvault never follows symlinks "
                                 "under skills/ or logs/ (refused, nothing written)")


def find_git_dir(start: Path) -> Path | None:
    """The git dir of the work tree containing ``start``, without running git."""
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return dot_git
        if dot_git.is_file():
            text = dot_git.read_text("utf-8", errors="replace").strip()
            if text.startswith("gitdir:"):
                target = Path(text[len("gitdir:"):].strip())
                return target if target.is_absolute() else (folder / target).resolve()
    return None


def find_vault(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Path:
    """The vault root: ``explicit`` (``--vault``), else ``GITVAULT_DIR``, else the nearest
    folder holding gitvault.yaml, walking up from ``cwd``."""
    chosen = explicit if explicit else os.environ.get("GITVAULT_DIR") or None
    if chosen:
        root = Path(chosen).expanduser().resolve()
        if not (root / CONFIG_NAME).is_file():
            raise NotFound(f"no vault at {root} (no {CONFIG_NAME}); run 'gitvault init {root}'")
        return root
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_NAME).is_file():
            return folder
    raise NotFound(
        f"no vault in {here} or any parent folder (no {CONFIG_NAME}); "
        "run 'gitvault init' or pass --vault PATH")


def skill_name(raw: str) -> str:
    """A skill name as every input takes it (SPEC §2.1): lower-cased, ``_`` as ``-``;
    anything else invalid is InvalidInput. Here, not in ``skills.model``, so the hot
    path need not import the skills package."""
    if not isinstance(raw, str):
        raise InvalidInput(f"invalid skill name {raw!r}: must be text")
    name = raw.strip().lower().replace("_", "-")
    if not name or len(name) > 64 or not NODE_RE.match(name):
        raise InvalidInput(
            f"invalid skill name {raw!r}: use 1-64 lowercase letters, digits and single "
            "hyphens (e.g. debug-swift-actor-isolation)")
    return name


def host_node() -> str:
    """The host name reduced to ``[a-z0-9-]``."""
    chars = [c if c in _NODE_CHARS else " " for c in os.uname().nodename.lower()]
    reduced = "-".join("".join(chars).split())  # each run of other characters: one hyphen
    return reduced[:64].strip("-") or "node"


def _valid_node(value: str, origin: str) -> str:
    if len(value) > 64 or not NODE_RE.match(value):
        raise InvalidInput(f"invalid node id {value!r} from {origin}: use lowercase letters, "
                           "digits and single hyphens")
    return value


def resolve_node(explicit: str | None, git_dir: Path | None) -> str:
    """``--node``, else ``GITVAULT_NODE``, else ``git config gitvault.node`` as git reads
    it for the repository of ``git_dir`` (``VaultLayout.git_dir``; None outside git:
    system and global config only), else the host name. git runs only when the first
    two are absent."""
    if explicit:
        return _valid_node(explicit, "--node")
    from_env = os.environ.get("GITVAULT_NODE")
    if from_env:
        return _valid_node(from_env, "GITVAULT_NODE")
    configured = _config_node(git_dir)
    if configured:
        return _valid_node(configured, "git config gitvault.node")
    return host_node()


_OVERRIDES = ("GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG")


def _config_files(git_dir: Path | None) -> list[str] | None:
    """Every file git reads config from for ``git_dir`` (system, global, the repository's
    and the worktree's), or None when that cannot be known without git: ``-c`` settings
    of a calling git, or an ``[include]`` in one of them."""
    env = os.environ
    if any(key in env for key in _OVERRIDES):
        return None
    files = []
    if not env.get("GIT_CONFIG_NOSYSTEM"):
        if "GIT_CONFIG_SYSTEM" in env:
            files.append(env["GIT_CONFIG_SYSTEM"])
        else:
            files.append("/etc/gitconfig")
            for folder in env.get("PATH", "").split(os.pathsep):  # git's own prefix
                if folder and os.access(os.path.join(folder, "git"), os.X_OK):
                    real = os.path.realpath(os.path.join(folder, "git"))
                    files.append(os.path.join(os.path.dirname(os.path.dirname(real)), "etc",
                                              "gitconfig"))
                    break
    home = env.get("HOME", "")
    if "GIT_CONFIG_GLOBAL" in env:
        files.append(env["GIT_CONFIG_GLOBAL"])
    else:
        xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        files += [os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")]
    if git_dir is not None:
        common = git_dir
        try:
            common = git_dir / (git_dir / "commondir").read_text("utf-8").strip()
        except OSError:
            pass
        files += [str(common / "config"), str(git_dir / "config.worktree")]
    for path in files:
        try:
            with open(path, "rb") as fh:
                if b"include" in fh.read().lower():
                    return None
        except OSError:
            continue
    return files


def _ask_git(git_dir: Path | None) -> str | None:
    from gitvault.core.git import config_value  # a subprocess: only when it is needed

    return config_value(git_dir, "gitvault.node")


def _config_node(git_dir: Path | None) -> str | None:
    """``git config gitvault.node``, from a cache under ``.git/gitvault/`` checked against
    the identity, size and times of every file git would read it from (so the hot
    commands start no git process while nothing changed); git itself answers otherwise."""
    files = _config_files(git_dir) if git_dir is not None else None
    if files is None or git_dir is None:
        return _ask_git(git_dir)
    key = []
    for path in files:  # the files there are: one that appears later changes the key
        try:
            st = os.stat(path)
            key.append([path, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns])
        except OSError:
            continue  # absent (inside a git hook, git's own PATH names other candidates)
    cache = git_dir / "gitvault" / "node.json"
    import json

    try:
        saved = json.loads(cache.read_text("utf-8"))
        if saved["key"] == key:
            return str(saved["node"]) if saved["node"] is not None else None
    except (OSError, ValueError, KeyError, TypeError):
        pass
    value = _ask_git(git_dir)
    try:
        cache.parent.mkdir(exist_ok=True)
        tmp = cache.with_name(f".node.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, "node": value}), "utf-8")
        os.replace(tmp, cache)
    except OSError:
        pass  # the cache is an optimisation
    return value
