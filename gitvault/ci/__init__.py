"""The GitHub workflow's steps (SPEC §6): ``gitvault ci report`` and ``gitvault ci
issues``, run by the workflow ``init --github`` installs.

- :mod:`gitvault.ci.findings` — the check: health, flags and drift of every skill (the
  JSON of :mod:`gitvault.runs.report`), why each problem skill is one, its last failure.
- :mod:`gitvault.ci.markdown` — untrusted text (skill names, run notes) made safe for
  GitHub markdown: redacted, and shown only inside code spans.
- :mod:`gitvault.ci.report` — the job summary and the ``health`` record.
- :mod:`gitvault.ci.gh` — the ``gh`` CLI, run with an argv list and a timeout.
- :mod:`gitvault.ci.issues` — one issue per flagged or drifting skill, kept in step.

It sits beside the MCP server, above the vault, and imports nothing of its own layer.
"""
