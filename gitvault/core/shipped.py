"""Files gitvault ships beside its code: ``hooks/`` (the shims), ``templates/`` (what
``init`` writes) and ``examples/`` (the demo's skills). In a wheel they are
``gitvault/_<name>/`` (pyproject force-includes them); in a source checkout they are
``<repo>/<name>/``.
"""

from __future__ import annotations

from pathlib import Path

from gitvault.core.files import write_atomic
from gitvault.core.paths import VaultLayout
from gitvault.errors import NotFound

_PACKAGE = Path(__file__).resolve().parent.parent


def shipped(name: str) -> Path:
    """The shipped folder ``name`` (``hooks``, ``templates``, ``examples``)."""
    for folder in (_PACKAGE / f"_{name}", _PACKAGE.parent / name):
        if folder.is_dir():
            return folder
    raise NotFound(f"the gitvault {name} folder is missing from this installation")


def template(name: str) -> str:
    """The text of ``templates/<name>``."""
    return (shipped("templates") / name).read_text("utf-8")


def gitattributes_lines() -> list[str]:
    """The lines every vault's ``.gitattributes`` holds (SPEC §1)."""
    return [line for line in template("gitattributes").splitlines() if line.strip()]


def add_gitattributes(layout: VaultLayout, *, write: bool = True) -> list[str]:
    """The lines of the template the vault's .gitattributes lacks, appended to it
    (atomically, the user's own lines kept) when ``write``."""
    path = layout.gitattributes
    present = path.read_text("utf-8").splitlines() if path.is_file() else []
    missing = [line for line in gitattributes_lines() if line not in present]
    if missing and write:
        write_atomic(path, "\n".join([*present, *missing]) + "\n")
    return missing
