"""The seed's ``skill_patch`` tool protocol: one JSON object in, one out.

``{"action": "create" | "patch" | "list" | "search", ...}``. create is a silent
no-op on an existing skill; patch makes a new version, resets the state to
active and falls back to create. A missing description defaults to the trigger.
"""

from __future__ import annotations

import json
from typing import Any

from gitvault.errors import InvalidInput
from gitvault.skills.model import STATES
from gitvault.skills.store import SkillEdit
from gitvault.vault.facade import Vault

ACTIONS = ("create", "patch", "search", "list")
FIELDS = {"action", "name", "trigger", "content", "description", "kind", "tags", "query",
          "code", "tests", "example", "provenance", "sensitive", "state", "k"}


def parse_request(text: str) -> dict[str, Any]:
    try:
        text.encode("utf-8")
        request = json.loads(text)
        json.dumps(request, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # bytes read as surrogates, or a "\udXXX" escape alone
        raise InvalidInput("tool input is not UTF-8 text (it holds a byte that is not "
                           "UTF-8 or a lone surrogate)") from None
    except ValueError as exc:
        raise InvalidInput(f"tool input is not valid JSON: {exc}") from None
    except RecursionError:
        raise InvalidInput("tool input is not valid JSON: nested too deeply") from None
    if not isinstance(request, dict):
        raise InvalidInput("tool input must be a JSON object with an \"action\"")
    return request


def _text(request: dict[str, Any], key: str, required: bool = False) -> str | None:
    value = request.get(key)
    if value is None:
        if required:
            raise InvalidInput(f"action {request['action']!r} needs {key!r}")
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{key!r} must be a string")
    return value


def _edit(request: dict[str, Any]) -> SkillEdit:
    tags = request.get("tags")
    if isinstance(tags, list) and all(isinstance(t, str) for t in tags):
        tags = ",".join(tags)
    elif tags is not None and not isinstance(tags, str):
        raise InvalidInput("'tags' must be a string 'a,b' or a list of strings")
    sensitive = request.get("sensitive")
    if sensitive is not None and not isinstance(sensitive, bool):
        raise InvalidInput("'sensitive' must be true or false")
    return SkillEdit(content=_text(request, "content"), description=_text(request, "description"),
                     trigger=_text(request, "trigger"), kind=_text(request, "kind"),
                     provenance=_text(request, "provenance"), tags=tags, sensitive=sensitive,
                     code=_text(request, "code"), tests=_text(request, "tests"),
                     example=_text(request, "example"))


def handle(vault: Vault, request: dict[str, Any]) -> dict[str, Any]:
    """Run one request; errors raise GitvaultError (the caller reports them)."""
    action = request.get("action")
    if action not in ACTIONS:
        raise InvalidInput(f"unknown action {action!r}: use one of {', '.join(ACTIONS)}")
    unknown = sorted(set(request) - FIELDS)
    if unknown:
        raise InvalidInput(f"unknown field(s) {', '.join(map(repr, unknown))} in tool input")
    if action == "list":
        stats, _ = vault.skill_stats()
        wanted = _text(request, "state") or "active"
        if wanted not in (*STATES, "all"):
            raise InvalidInput(f"invalid state {wanted!r}: use one of {', '.join(STATES)}, all")
        skipped: list[str] = []
        listed = [vault.skills.view(s, stats) for s in vault.skills.iter_all(skipped=skipped)
                  if wanted == "all" or s.state == wanted]
        answer: dict[str, Any] = {"action": "list", "skills": listed}
        if skipped:
            answer["warnings"] = skipped
        return answer
    if action == "search":
        from gitvault.retrieval import inject as retrieval

        query = _text(request, "query", required=True) or ""
        k = request.get("k", retrieval.DEFAULT_SEARCH_K)
        found = retrieval.search(vault, query, retrieval.check_k(k, "'k'"))
        return {"action": "search", **found}
    name = _text(request, "name", required=True) or ""
    edit = _edit(request)
    if action == "create":
        if edit.description is None and not edit.trigger:
            raise InvalidInput("action 'create' needs 'trigger' or 'description'")
        if edit.content is None:
            edit.content = ""
        skill, created = vault.skills.create(name, edit)
        status = "created" if created else "exists"
    else:
        skill, op = vault.skills.patch(name, edit)
        status = "patched" if op == "patch" else "created"
    stats, _ = vault.skill_stats()
    return {"action": action, "status": status, "skill": vault.skills.view(skill, stats)}
