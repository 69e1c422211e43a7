"""gitvault: procedural memory for AI agents, kept in a git repository.

The library API: ``Vault`` (open a vault and work with it), ``SkillEdit``,
``Skill``, ``init_vault`` and the errors. Names load lazily so that importing
``gitvault`` (and running the CLI) stays fast.
"""

from __future__ import annotations

TYPE_CHECKING = False  # no typing import at run time (start-up speed)

__version__ = "0.1.0"

_EXPORTS = {
    "Vault": "gitvault.vault.facade", "SkillEdit": "gitvault.skills.store",
    "init_vault": "gitvault.vault.init",
    "Skill": "gitvault.skills.model", "GitvaultError": "gitvault.errors",
    "InvalidInput": "gitvault.errors", "NotFound": "gitvault.errors",
    "ConfigError": "gitvault.errors", "Conflict": "gitvault.errors",
    "CheckFailed": "gitvault.errors",
}
__all__ = [*_EXPORTS, "__version__"]

if TYPE_CHECKING:
    from gitvault.errors import (
        CheckFailed,
        ConfigError,
        Conflict,
        GitvaultError,
        InvalidInput,
        NotFound,
    )
    from gitvault.skills.model import Skill
    from gitvault.skills.store import SkillEdit
    from gitvault.vault.facade import Vault
    from gitvault.vault.init import init_vault


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gitvault' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
