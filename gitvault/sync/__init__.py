"""``gitvault sync``: commit, fetch, merge, push over a real git remote (SPEC §4, §4.3, §9).

- :mod:`gitvault.sync.gitops` — the git steps sync needs (fetch, push as a
  compare-and-swap, ancestry, stale lock files and interrupted merges), over
  :func:`gitvault.core.git.git`.
- :mod:`gitvault.sync.merge` — the merge: logs union-merge; a skill changed on both
  sides resolves to a deterministic version max+1; what cannot merge is rescued.
- :mod:`gitvault.sync.starts` — cross-node ``start``: a start the remote did not
  have loses to one it had (``lost_start_race``).
- :mod:`gitvault.sync.secrets` — outgoing skill files scanned before a push.
- :mod:`gitvault.sync.engine` — the loop: retries with jittered backoff, the summary.

Imports: vault (the facade and commit_logs), skills, queue, core, errors.
"""
