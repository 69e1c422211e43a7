"""Skills: the SKILL.md model and its history in git (``name@vN``, URNs, diffs).
"""
