"""``improve``: seed §7's seven steps (SPEC §7). 1 observe and 2 analyse the runs with
the health rules; 3 diagnose each flagged skill (and each earlier auto-edit that had no
effect) from its body, recent failure notes and the knowledge diffs that touched it;
4 propose and 5 evaluate (the model's 1-3 scored proposals, each checked: only the
body may change); 6 apply under the gate (relevance, safety, not sensitive, not
auto-edited in the last 24 hours by git history), else commit the proposal on
``gitvault/proposals/<skill>/<timestamp>``; 7 record every decision.

Every answer is read before anything is written: a malformed one changes nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from gitvault.core import git, records
from gitvault.core.clock import now, now_seconds
from gitvault.core.paths import VaultLayout
from gitvault.core.redact import redact
from gitvault.errors import GitvaultError
from gitvault.knowledge.log import diffs_touching
from gitvault.llm import prompts
from gitvault.llm import proposals as answers
from gitvault.llm.extract import body_problem, tokens
from gitvault.llm.journal import Loop
from gitvault.llm.judge import Verdict, before, gate_reasons, verdicts
from gitvault.llm.judge import judged as settled_edits
from gitvault.runs import health as rules
from gitvault.runs.columns import check_run, ts_ms
from gitvault.skills.model import SKILL_FILE, Skill, render_skill
from gitvault.skills.store import SkillEdit


def failures(loop: Loop, name: str, since: datetime) -> list[dict[str, Any]]:
    """Runs of ``name`` since ``since`` that did not succeed, oldest first."""
    start = ts_ms(since.isoformat()) or 0
    scan = records.scan(loop.layout.stream("runs"), check=check_run)
    return [r for r in scan.records if r.get("skill") == name and r.get("result") != "success"
            and (ts_ms(r.get("ts")) or 0) > start]


def refusal(proposal: answers.Proposal) -> str | None:
    """Why a proposal is refused whatever its scores (None: it is only a body)."""
    if proposal.extras:
        return (f"the answer tries to set {', '.join(sorted(map(str, proposal.extras)))} "
                "(only the skill body may change)")
    return body_problem(proposal.content)


def decide(loop: Loop, skill: Skill, diagnosis: answers.Diagnosis, moment: datetime,
           health: dict[str, Any]) -> dict[str, Any]:
    """Step 5-6 without writing: ``action`` apply | propose | refused | unchanged."""
    cfg = loop.config.improve
    shown, valid = [], []
    for proposal in diagnosis.proposals:
        why = refusal(proposal)
        shown.append({**proposal.scores(), **({"refused": why} if why else {})})
        if why is None:
            valid.append(proposal)
    decision: dict[str, Any] = {"skill": skill.name, "diagnosis": diagnosis.diagnosis,
                                "proposals": shown, "fromVersion": skill.version,
                                "health": health}
    if not valid:
        return {**decision, "action": "refused", "reasons": [p["refused"] for p in shown]}

    def rank(p: answers.Proposal) -> tuple[bool, float, float]:
        return (p.relevance > cfg.min_relevance and p.safety > cfg.min_safety,
                p.relevance * p.safety, -p.effort)

    best = max(valid, key=rank)
    decision.update(proposal=best.scores(), content=redact(best.content))
    if best.content.strip() == skill.body.strip():
        return {**decision, "action": "unchanged", "reasons": ["the proposal is the current body"]}
    reasons = []
    if not best.relevance > cfg.min_relevance:
        reasons.append(f"relevance {best.relevance:g} is not above {cfg.min_relevance:g}")
    if not best.safety > cfg.min_safety:
        reasons.append(f"safety {best.safety:g} is not above {cfg.min_safety:g}")
    size, budget = tokens(best.content), loop.config.extract.max_tokens
    if size > max(budget, tokens(skill.body)):  # a person reads a body that big first
        reasons.append(f"the content is {size} tokens, over extract.max_tokens ({budget}) "
                       "and longer than the current body")
    reasons += gate_reasons(loop, skill.name, skill.sensitive, moment)
    return {**decision, "action": "propose" if reasons else "apply", "reasons": reasons}


def propose(loop: Loop, skill: Skill, content: str, moment: datetime, message: str) -> tuple[str, str]:
    """Commit ``content`` as ``skill``'s next version on a new proposal branch, leaving
    the work tree and HEAD alone. Returns (branch, commit)."""
    draft = Skill(skill.name, skill.description, content if content.endswith("\n") else content + "\n",
                  dict(skill.metadata), dict(skill.extra))
    draft.version = loop.skills.next_version(skill)
    draft.metadata["updated"] = now_seconds()
    base = f"gitvault/proposals/{skill.name}/{moment.strftime('%Y%m%dT%H%M%SZ')}"
    branch, n = base, 1
    while git.ref_exists(loop.top, f"refs/heads/{branch}"):
        n += 1
        branch = f"{base}-{n}"
    path = f"{VaultLayout.skill_git_dir(loop.vault_rel, skill.name)}/{SKILL_FILE}"
    sha = git.commit_on_branch(loop.top, branch, {path: render_skill(draft).encode("utf-8")},
                               f"gitvault: propose {skill.name} v{draft.version}",
                               {"Op": "propose", "Skill": skill.name,
                                "Version": str(draft.version), "Node": loop.node},
                               redact(message))
    return branch, sha


def _message(decision: dict[str, Any]) -> str:
    p = decision.get("proposal") or {}
    return (f"{p.get('title', '')}\n\nDiagnosis: {decision['diagnosis']}\n"
            f"Scores: relevance {p.get('relevance')}, safety {p.get('safety')}, "
            f"effort {p.get('effort')}\nNot applied automatically: " + "; ".join(decision["reasons"]))


def recheck(loop: Loop, decision: dict[str, Any], moment: datetime) -> dict[str, Any]:
    """``decision`` as the gate sees it now: an ``apply`` becomes ``propose`` when the
    skill changed since it was read or may no longer be auto-edited."""
    if decision["action"] != "apply":
        return decision
    skill = loop.skills.get(decision["skill"])
    reasons = gate_reasons(loop, skill.name, skill.sensitive, moment)
    if skill.version != decision["fromVersion"]:
        reasons.insert(0, f"the skill changed to v{skill.version} while the model was asked")
    return {**decision, "action": "propose", "reasons": reasons} if reasons else decision


def carry_out(loop: Loop, decision: dict[str, Any], moment: datetime) -> dict[str, Any]:
    """Step 6-7: apply or propose ``decision`` and record it."""
    skill = loop.skills.get(decision["skill"])
    action = decision["action"]
    if action == "apply":
        try:
            made, _ = loop.skills.patch(skill.name, SkillEdit(content=decision["content"]),
                                        op="improve")
            decision.update(action="applied", version=made.version,
                            commit=loop.skills.history(skill.name)[0].sha)
        except GitvaultError as exc:
            decision.update(action="refused", reasons=[str(exc)])
    elif action == "propose":
        branch, sha = propose(loop, skill, decision["content"], moment, _message(decision))
        decision.update(action="proposed", branch=branch, commit=sha)
    loop.record({"op": "improve", **{k: v for k, v in decision.items() if k != "content"}})
    return decision


def settle(loop: Loop, verdict: Verdict, moment: datetime) -> dict[str, Any]:
    """Record a verdict; a clear drop is rolled back under the gate, else proposed."""
    shown = verdict.to_json()
    if verdict.action == "drop":
        skill = loop.skills.get(verdict.skill)
        reasons = gate_reasons(loop, skill.name, skill.sensitive, moment)
        shown["reason"] = "a clear drop in the runs' average since the change"
        if verdict.previous is None:
            shown.update(action="no_baseline")
        elif not reasons:
            rolled = loop.skills.rollback(skill.name, verdict.previous, op="improve-rollback")
            shown.update(action="rolled_back", rollbackVersion=rolled.version)
        else:
            old = loop.skills.read_version(skill.name, verdict.previous)
            branch, sha = propose(loop, skill, old.body, moment,
                                  f"Roll back to v{verdict.previous}: the runs dropped since "
                                  f"v{verdict.version}\n\nNot applied automatically: "
                                  + "; ".join(reasons))
            shown.update(action="proposed", branch=branch, proposalCommit=sha, reasons=reasons)
    loop.record({"op": "judge", **shown})
    return shown


def improve(loop: Loop, *, days: int | None = None, dry_run: bool = False) -> dict[str, Any]:
    """One pass of the loop. Returns ``{"dryRun", "flagged", "judged", "pending",
    "decisions", "notes"}``."""
    moment = now()
    window = loop.config.health.window_days if days is None else days
    judged = verdicts(loop, moment)
    report = rules.analyze(loop.runs(), moment, window,
                           rules.Thresholds.from_config(loop.config.health))
    flagged = [name for name, data in report.items() if data["flagged"]]
    targets = {name: "" for name in flagged}
    for verdict in judged:
        if verdict.action == "no_effect":
            targets[verdict.skill] = verdict.evidence()
        elif verdict.action == "drop":
            targets.pop(verdict.skill, None)
    try:
        since = before(moment, timedelta(days=window))
    except OverflowError:  # more days than timedelta holds
        since = before(moment, timedelta.max)
    notes, asked = [], []
    for name, evidence in targets.items():
        found = loop.skills.find(name)
        if found is None or found[1]:
            notes.append(f"{name}: flagged, but " + ("it is archived" if found else
                                                     "no skill of that name is in this vault"))
            continue
        skill = loop.skills.get(name)
        prompt = prompts.improve_prompt(name, skill.version, skill.body, report.get(name, {}),
                                        failures(loop, name, since),
                                        diffs_touching(loop.layout, name, since, moment), evidence)
        asked.append((skill, answers.parse_improve(loop.ask(prompt)), report.get(name, {})))
    decisions = [decide(loop, skill, diagnosis, moment, health) for skill, diagnosis, health in asked]
    pending = [v.to_json() for v in judged if v.action == "waiting"]
    ready = [v for v in judged if v.action != "waiting"]
    if dry_run:
        return {"dryRun": True, "flagged": flagged, "judged": [v.to_json() for v in ready],
                "pending": pending, "decisions": decisions, "notes": notes}
    # Another improve may have decided on the same skills while the model was asked:
    # under one lock, the gate is asked again just before anything is written.
    with records.locked(loop.layout.lock_file("improve")):
        judged_now = settled_edits(loop)
        settled = [settle(loop, v, moment) for v in ready
                   if (v.skill, v.version) not in judged_now]
        done = [carry_out(loop, recheck(loop, d, moment), moment) for d in decisions]
    return {"dryRun": False, "flagged": flagged, "judged": settled, "pending": pending,
            "decisions": done, "notes": notes}
