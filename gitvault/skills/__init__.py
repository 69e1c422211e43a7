"""Skills: the SKILL.md model, its history in git (``name@vN``, URNs, diffs), the store
(create, patch, rollback, archive, restore: one version and one commit each), code
skills through the gate, usage counts folded from the logs, the lifecycle, and the
Agent Skills interchange (export, import, the AGENTS.md index).
Imports: ``gate`` (code skills are gated before they are stored).
"""
