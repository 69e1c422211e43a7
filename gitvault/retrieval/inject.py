"""Search, context injection and outcome feedback over an open Vault (SPEC §4.1):
the seed's buildSkillContext / recordOutcome loop. The CLI, the tool protocol and
the MCP server all call these, so they answer alike.

Usage counts come from the ``events`` log (an ``inject`` record per context, an
``outcome`` record per reported result); ranking and the context block come from
:mod:`gitvault.retrieval`. Every input is checked before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from gitvault.core import git
from gitvault.core.files import read_bytes
from gitvault.core.paths import VaultLayout
from gitvault.core.records import LineWarning, Scan
from gitvault.core.redact import redact
from gitvault.errors import Conflict, InvalidInput, NotFound
from gitvault.retrieval.context import MIN_BUDGET, Candidate, build_context
from gitvault.retrieval.documents import CODE_FILE
from gitvault.retrieval.embed import CONFIG_KEY, Embedder
from gitvault.retrieval.embed import load as load_embedder
from gitvault.retrieval.engine import Ranking, rank_skills
from gitvault.retrieval.rank import Hit
from gitvault.skills.model import Skill, read_skill
from gitvault.skills.versions import Version, parse_ref

DEFAULT_SEARCH_K = 5
PROMPT_CHARS = 2000  # an inject record keeps at most this much of the prompt


class Vault(Protocol):
    """The parts of an open vault retrieval uses (``gitvault.Vault`` has them all)."""

    layout: VaultLayout
    top: Path
    config: Any
    node: str

    def skill_stats(self) -> tuple[dict[str, dict[str, int]], list[LineWarning]]: ...
    def history(self, name: str) -> list[Version]: ...
    def read_version(self, name: str, version: int) -> Skill: ...
    def get_skill(self, name: str) -> Skill: ...
    def git_path(self, path: Path) -> str: ...
    def append(self, stream: str, record: dict[str, Any]) -> dict[str, Any]: ...
    def scan(self, stream: str) -> Scan: ...


def check_k(k: Any, flag: str = "-k") -> int:
    if isinstance(k, bool) or not isinstance(k, int):
        raise InvalidInput(f"{flag} must be a whole number, got {k!r}")
    if k < 1:
        raise InvalidInput(f"{flag} must be at least 1, got {k}")
    return k


def _ranking(vault: Vault, query: str, limit: int, explain: bool = False
             ) -> tuple[Ranking, list[str]]:
    """The ranking for ``query``: usage, success and the evidence of past outcomes are
    folded from the events log into the index (only what was appended since the last
    query is read)."""
    ranking = rank_skills(vault.layout.skills, query, cache_dir=vault.layout.cache,
                          limit=limit, events_dir=vault.layout.stream("events"),
                          explain=explain, embedder=embedder(vault))
    return ranking, list(ranking.warnings)


def embedder(vault: Vault) -> Embedder | None:
    """The dense retrieval model the clone's own git config names (``git config
    gitvault.embed-model``; None: off). Only the clone's config counts (a global
    setting would turn it on in every vault): its file is read first, and git runs only
    when it mentions the key."""
    git_dir = vault.layout.git_dir
    if git_dir is not None and git_dir.is_dir():
        common = git_dir / "commondir"  # a linked worktree keeps its config there
        base = (git_dir / common.read_text("utf-8").strip()) if common.is_file() else git_dir
        try:
            text = (base / "config").read_text("utf-8", "replace").lower()
        except OSError:
            text = CONFIG_KEY.split(".")[1]  # unreadable: ask git
        if CONFIG_KEY.split(".")[1] not in text:
            return None
    proc = git.git(vault.top, "config", "--local", "--get", CONFIG_KEY, check=False)
    setting = proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else ""
    return load_embedder(setting) if setting else None


def search_hits(vault: Vault, query: str, k: int = DEFAULT_SEARCH_K, *, explain: bool = False
                ) -> tuple[list[Hit], list[str]]:
    """The best ``k`` hits for ``query`` and any warnings (unreadable files, bad lines);
    ``explain`` fills each hit's ``explain`` (which fields and terms scored)."""
    check_k(k)
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("the search query is empty")
    ranking, warnings = _ranking(vault, query, k, explain)
    unverified = unverified_folders(vault, ranking.hits)
    return [replace(h, state="unverified") if h.folder in unverified else h
            for h in ranking.hits], warnings


def unverified_folders(vault: Vault, hits: Iterable[Hit]) -> set[str]:
    """The folders of code-skill hits this node holds no gate evidence for (SPEC §1
    Trust): shown as ``unverified``, never handed to an agent. Only code hits pay."""
    code = [h.folder for h in hits if h.kind == "code" and h.state != "archived"]
    if not code:
        return set()
    from gitvault.skills.codegate import is_trusted, trusted_evidence

    trusted = trusted_evidence(vault.layout, vault.node)
    return {f for f in code if not is_trusted(vault.layout.skills / f, trusted)}

def explanation(hit: Hit) -> dict[str, Any]:
    """Why ``hit`` scored (``search --explain``, the ``why`` of an injection): its BM25F
    relevance, the usage and success factor, the score of each field (``evidence``:
    prompts of successful injections) and of each query term (stemmed), with what
    failed prompts took back (``against``)."""
    fields: dict[str, float] = {}
    terms = []
    for part in hit.explain or ():
        entry: dict[str, Any] = {"term": part.term, "score": round(part.score, 4),
                                 "fields": {name: round(v, 4) for name, v in part.fields}}
        if part.against > 0:
            entry["against"] = round(part.against, 4)
        terms.append(entry)
        gross = sum(v for _, v in part.fields)
        for name, value in part.fields:  # the term's net score, shared as its gross was
            fields[name] = fields.get(name, 0.0) + (part.score * value / gross if gross else 0.0)
    data: dict[str, Any] = {
        "relevance": round(hit.relevance, 4), "boost": round(hit.boost, 4),
        "fields": {name: round(v, 4) for name, v in sorted(fields.items(), key=lambda kv: -kv[1])},
        "terms": terms}
    if hit.dense is not None:  # relevance is then the fused score; terms are lexical
        data["dense"] = round(hit.dense, 4)
    return data


def search(vault: Vault, query: str, k: int = DEFAULT_SEARCH_K, *, explain: bool = False
           ) -> dict[str, Any]:
    """``{"results": [{name, version, state, score, explain?}], "warnings"?}``, best first;
    a code skill without this node's gate evidence has state ``unverified``."""
    hits, warnings = search_hits(vault, query, k, explain=explain)
    return search_data(hits, warnings, explain=explain)


def search_data(hits: list[Hit], warnings: list[str], *, explain: bool = False
                ) -> dict[str, Any]:
    """The ``search --json`` object of ``hits`` (the one copy every front end prints)."""
    results = []
    for h in hits:
        result: dict[str, Any] = {"name": h.name, "version": h.version, "state": h.state,
                                  "score": round(h.score, 4)}
        if explain:
            result["explain"] = explanation(h)
        results.append(result)
    data: dict[str, Any] = {"results": results}
    if warnings:
        data["warnings"] = warnings
    return data


def parse_pins(pins: Iterable[str]) -> list[tuple[str, int]]:
    """``name@vN`` references, each a distinct skill with an explicit version."""
    parsed: list[tuple[str, int]] = []
    for ref in pins:
        name, version = parse_ref(ref)
        if version is None:
            raise InvalidInput(f"--pin {ref!r} needs a version: use NAME@vN")
        if any(name == seen for seen, _ in parsed):
            raise InvalidInput(f"skill {name!r} is pinned twice")
        parsed.append((name, version))
    return parsed


def code_at(vault: Vault, name: str, version: int) -> tuple[str | None, str]:
    """skill.py of ``name`` as committed with version ``version``, and the evidence
    sha256 of that version's three code files."""
    from gitvault.skills.codegate import FILES, evidence_for

    for entry in vault.history(name):
        if entry.version != version:
            continue
        for archived in (False, True):
            folder = vault.layout.skill_dir(name, archived=archived)
            found = {n: git.show_file(vault.top, entry.sha, vault.git_path(folder / n))
                     for n in FILES}
            files = {n: d.decode("utf-8", "surrogateescape") for n, d in found.items()
                     if d is not None}
            if CODE_FILE in files:
                return files[CODE_FILE].encode("utf-8", "surrogateescape").decode(
                    "utf-8", "replace"), evidence_for(files)
        return None, ""
    return None, ""


def context(vault: Vault, prompt: str, *, k: int | None = None, budget: int | None = None,
            pins: Iterable[str] = ()) -> dict[str, Any]:
    """Build the context block for ``prompt`` and record the injection.

    Pinned skills come first, at their pinned version; the best search hits fill
    the rest of the ``k`` places. Returns ``{"injection", "skills", "text"}``;
    the injection is None (and nothing is recorded) when no skill was chosen."""
    settings = vault.config.context
    k = check_k(settings.k if k is None else k)
    budget = settings.budget if budget is None else budget
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < MIN_BUDGET:
        raise InvalidInput(f"--budget {budget} is too small: at least {MIN_BUDGET} tokens "
                           "(a token is 4 characters)")
    if not isinstance(prompt, str) or not prompt.strip():
        raise InvalidInput("the prompt is empty")
    pinned = parse_pins(pins)
    if len(pinned) > k:
        raise InvalidInput(f"{len(pinned)} pinned skills but -k {k}: raise -k")
    versions = [(vault.read_version(name, version), version) for name, version in pinned]
    ranking, warnings = _ranking(vault, prompt, k + len(pinned), explain=True)
    why_of = {hit.name: explanation(hit) for hit in ranking.hits}
    candidates = []
    skipped: list[str] = []  # code skills without this node's gate evidence (SPEC §1)
    for skill, version in versions:
        code = None
        if skill.kind == "code":
            code, sha = code_at(vault, skill.name, version)
            from gitvault.skills.codegate import trusted_evidence

            if sha not in trusted_evidence(vault.layout, vault.node):
                skipped.append(f"{skill.name}@v{version}")
                continue
        candidates.append(Candidate(skill.name, version, skill.kind, skill.trigger, skill.body,
                                    code, ranking.scores.get(skill.name, 0.0), pinned=True))
    names = {name for name, _ in pinned}
    hits = [h for h in ranking.hits if h.name not in names]
    unverified = unverified_folders(vault, hits)
    if unverified and len(ranking.hits) >= k + len(pinned):  # rank further down
        ranking, _ = _ranking(vault, prompt, len(ranking.scores))
        hits = [h for h in ranking.hits if h.name not in names]
        unverified = unverified_folders(vault, hits)
    skipped += [h.name for h in hits if h.folder in unverified]
    hits = [h for h in hits if h.folder not in unverified]
    for hit in hits[:k - len(candidates)]:
        folder = vault.layout.skills / hit.folder
        try:
            skill = read_skill(folder, vault.layout.root)
            code = None
            if skill.kind == "code" and (folder / CODE_FILE).exists():
                code = read_bytes(folder / CODE_FILE, below=vault.layout.root).decode(
                    "utf-8", "replace")
        except InvalidInput as exc:  # changed since it was ranked, or a symlink now
            warnings.append(f"{exc} (skipped; see 'gitvault doctor')")
            continue
        candidates.append(Candidate(skill.name, skill.version, skill.kind, skill.trigger,
                                    skill.body, code, hit.score))
    built = build_context(candidates, k=k, budget=budget, lesson_tokens=settings.lesson_tokens,
                          helper_tokens=settings.helper_tokens)
    injection = None
    why = [_why(c, why_of.get(c.name)) for c in built.chosen]
    if built.chosen:
        shown = redact(prompt)  # before cutting: a cut secret may no longer be recognised
        shown = shown if len(shown) <= PROMPT_CHARS else shown[:PROMPT_CHARS - 3] + "..."
        record = vault.append("events", {"op": "inject", "prompt": shown,
                                         "skills": [f"{c.name}@v{c.version}" for c in built.chosen],
                                         "why": why})
        injection = record["id"]
    data: dict[str, Any] = {
        "injection": injection,
        "skills": [{"name": c.name, "version": c.version, "kind": c.kind,
                    "score": round(c.score, 4)} for c in built.chosen],
        "text": built.text,
    }
    if skipped:
        warnings = [*warnings, "skipped unverified code skill(s) " + ", ".join(skipped)
                    + ": this node holds no passing gate evidence for their files (run "
                    "'gitvault skill verify --all')"]
    if warnings:
        data["warnings"] = warnings
    return data


WHY_TERMS = 5  # terms an injection record keeps per skill


def _why(chosen: Candidate, explained: dict[str, Any] | None) -> dict[str, Any]:
    """Why ``chosen`` was injected, as the inject record keeps it: pinned, or the
    fields and (at most ``WHY_TERMS``) terms that scored."""
    why: dict[str, Any] = {"skill": f"{chosen.name}@v{chosen.version}"}
    if chosen.pinned:
        why["pinned"] = True
        return why
    if explained is not None:
        why["score"] = round(chosen.score, 4)
        why["fields"] = explained["fields"]
        why["terms"] = {t["term"]: t["score"] for t in explained["terms"][:WHY_TERMS]}
    return why


def _skill_refs(vault: Vault, skills: str) -> list[str]:
    refs: list[str] = []
    for raw in skills.split(","):
        if not raw.strip():
            continue
        name, version = parse_ref(raw)
        current = vault.get_skill(name)  # NotFound for an unknown skill
        if version is not None and version > current.version:
            raise NotFound(f"skill {name!r} has no version {version} (latest is "
                           f"v{current.version})")
        ref = f"{current.name}@v{version or current.version}"
        if ref not in refs:
            refs.append(ref)
    if not refs:
        raise InvalidInput("--skills needs at least one skill name: --skills a,b")
    return refs


def outcome(vault: Vault, *, success: bool, injection: str | None = None,
            skills: str | None = None, reason: str | None = None) -> dict[str, Any]:
    """Record one ``outcome``: for every skill of ``injection``, or of ``skills``
    ("a,b"). Reporting the same result for an injection again changes nothing
    (status "exists"); reporting the opposite result is a conflict."""
    if (injection is None) == (skills is None):
        raise InvalidInput("give an INJECTION id or --skills a,b (one of them)")
    if not isinstance(success, bool):
        raise InvalidInput("success must be true or false")
    reason = " ".join(reason.split()) if reason else None
    if injection is not None:
        records = vault.scan("events").records
        inject = next((r for r in records if r.get("id") == injection
                       and r.get("op") == "inject"), None)
        if inject is None:
            raise NotFound(f"no injection {injection!r} in the events log "
                           "(see the 'injection' of 'gitvault context --json')")
        earlier = next((r for r in records if r.get("op") == "outcome"
                        and r.get("injection") == injection), None)
        if earlier is not None:
            if earlier.get("success") is success:
                return {"status": "exists", "outcome": earlier}
            raise Conflict(f"injection {injection} already has a "
                           f"{'success' if earlier.get('success') is True else 'failure'} "
                           f"recorded ({earlier.get('id')})")
        refs = [str(ref) for ref in inject.get("skills") or []]
    else:
        refs = _skill_refs(vault, skills or "")
    record = vault.append("events", {"op": "outcome", "injection": injection, "skills": refs,
                                     "success": success, "reason": reason})
    return {"status": "recorded", "outcome": record}
