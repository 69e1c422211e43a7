"""Skill folders as search documents: the terms of each field, and the stat
signature and content hash (git blob ids) of the files they were read from."""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from gitvault.core.paths import SKILLS_DIR, SymlinkRefused, open_below
from gitvault.errors import InvalidInput
from gitvault.retrieval.tokens import tokenize
from gitvault.skills.model import SKILL_FILE, check_identity, parse_skill_bytes

CODE_FILE = "skill.py"
FIELDS = ("name", "trigger", "description", "tags", "body")


@dataclass(frozen=True)
class SkillInfo:
    """What a search reports about a skill (a hit adds its scores)."""

    name: str
    version: int
    state: str
    kind: str
    description: str
    folder: str


@dataclass(frozen=True)
class DocInfo(SkillInfo):
    """A skill's info and its field lengths."""

    lengths: tuple[int, ...]  # per field: number of terms


@dataclass(frozen=True)
class Document(DocInfo):
    """One skill as the ranker sees it: its info and its term counts."""

    counts: dict[str, tuple[int, ...]]  # term -> its count in each field of FIELDS


@dataclass(frozen=True)
class Loaded:
    """What reading one folder gave: a document, an error, or neither (the folder went
    away since it was listed), and what was read."""

    folder: str
    doc: Document | None
    error: str | None
    signature: str  # stat signature of the files read
    mtime_ns: int  # newest modification time among them
    blob: str  # content hash of the files read (git blob ids)


def stat_signature(st: os.stat_result) -> str:
    return f"{st.st_size}.{st.st_mtime_ns}.{st.st_ino}.{st.st_ctime_ns}"


def blob_id(data: bytes) -> str:
    """The git blob id of ``data`` (what ``git hash-object`` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _read(skills_dir: Path, path: Path) -> tuple[bytes, os.stat_result] | None:
    """The bytes of ``path`` and the stat they were read under (None if missing). No
    symlink below ``skills_dir`` is followed: SymlinkRefused (never its target read)."""
    for _ in range(5):
        try:
            with os.fdopen(open_below(skills_dir, path, os.O_RDONLY), "rb") as fh:
                before = os.fstat(fh.fileno())
                data = fh.read()
                after = os.fstat(fh.fileno())
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        if stat_signature(before) == stat_signature(after):
            return data, after
    return data, after  # still changing: the next check sees a new signature


def load(skills_dir: Path, folder: str) -> Loaded:
    """Read ``skills/<folder>/`` (SKILL.md, and skill.py for a code skill)."""
    base = skills_dir / folder
    path = base / SKILL_FILE
    source = f"{SKILLS_DIR}/{folder}/{SKILL_FILE}"  # relative: stored errors survive a move
    try:
        read = _read(skills_dir, path)
    except SymlinkRefused as exc:
        return Loaded(folder, None, _skipped(f"{SKILLS_DIR}/{exc}"), _link_signature(base, path),
                      0, "-")
    if read is None:
        return Loaded(folder, None, None, "-", 0, "-")  # gone since it was listed
    data, st = read
    signature, mtime, blob = stat_signature(st), st.st_mtime_ns, blob_id(data)
    try:
        skill = parse_skill_bytes(data, source)
        check_identity(skill, f"{SKILLS_DIR}/{folder}", folder)  # the folder is the identity
    except InvalidInput as exc:
        return Loaded(folder, None, _skipped(str(exc)), signature, mtime, blob)
    body = skill.body
    if skill.kind == "code":
        try:
            code = _read(skills_dir, base / CODE_FILE)
        except SymlinkRefused as exc:
            return Loaded(folder, None, _skipped(f"{SKILLS_DIR}/{exc}"), signature + "+-", mtime,
                          blob)
        if code is None:
            signature += "+-"
        else:
            signature += "+" + stat_signature(code[1])
            mtime = max(mtime, code[1].st_mtime_ns)
            blob += "+" + blob_id(code[0])
            body += "\n" + code[0].decode("utf-8", "replace")
    name = " ".join([skill.name, *name_words(skill.name, skill.description, skill.trigger)])
    fields = (name, skill.trigger, skill.description, " ".join(skill.tags), body)
    width = len(fields)
    grid: dict[str, list[int]] = {}
    lengths = []
    for i, text in enumerate(fields):
        found = tokenize(text)
        lengths.append(len(found))
        for term, n in Counter(found).items():
            grid.setdefault(term, [0] * width)[i] = n
    counts = {term: tuple(row) for term, row in grid.items()}
    doc = Document(skill.name, skill.version, skill.state, skill.kind, skill.description,
                   folder, tuple(lengths), counts)
    return Loaded(folder, doc, None, signature, mtime, blob)


_WORDS = re.compile(r"[a-z]{3,}")
# Words a compound name is often made of besides those of its own description.
_NAME_PARTS = ("tool", "app", "bot", "search", "helper", "finder", "explorer", "maker", "hub",
               "ai", "gpt", "chat", "pro", "api")


def name_words(name: str, *texts: str) -> list[str]:
    """The words a run-together name is made of (``airqualityforecast``: air, quality,
    forecast), found among the words of the skill's own ``texts``: the name's other
    spellings meet a query's words. Only a split that covers the whole piece counts."""
    vocabulary = {w for text in texts for w in _WORDS.findall(text.lower())}
    vocabulary.update(_NAME_PARTS)
    found: list[str] = []
    for piece in name.split("-"):
        if len(piece) < 6 or not piece.isalpha() or piece in vocabulary:
            continue
        found += _segment(piece, vocabulary)
    return found


def _segment(piece: str, vocabulary: set[str]) -> list[str]:
    """The split of ``piece`` into vocabulary words with the fewest words ([] if none)."""
    best: list[list[str] | None] = [[]] + [None] * len(piece)
    for end in range(1, len(piece) + 1):
        for start in range(max(0, end - 20), end - 1):
            word = piece[start:end]
            before = best[start]
            if before is not None and word in vocabulary and \
                    (best[end] is None or len(before) + 1 < len(best[end] or [])):
                best[end] = [*before, word]
    result = best[len(piece)]
    return result if result is not None and len(result) > 1 else []


def content_blob(skills_dir: Path, folder: str, code: bool) -> str:
    """The content hash ``load`` would record for this folder now."""
    try:
        read = _read(skills_dir, skills_dir / folder / SKILL_FILE)
        extra = _read(skills_dir, skills_dir / folder / CODE_FILE) if code else None
    except SymlinkRefused:
        return "-"
    if read is None:
        return "-"
    blob = blob_id(read[0])
    if code and extra is not None:
        blob += "+" + blob_id(extra[0])
    return blob


def _link_signature(base: Path, path: Path) -> str:
    """The stat signature the listing gives a symlinked folder or SKILL.md (the link's)."""
    for link in (base, path):
        try:
            if link.is_symlink():
                return stat_signature(os.lstat(link))
        except OSError:
            break
    return "-"


def _skipped(message: str) -> str:
    return f"{message} (skipped; see 'gitvault doctor')"
