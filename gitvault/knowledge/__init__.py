"""The knowledge watcher (SPEC §8, seed §8): external sources in one literal registry
of checkers (``pypi``, ``npm``, ``file``, ``git-ref``, ``command``), the ``knowledge``
stream's fold (checks, diffs, routing marks), ``watch`` (due checks, baselines, diffs,
routing by severity to the prompt-request bus), ``diffs`` and the import of
agent-skill-bus's knowledge files. Imports: ``queue``.
"""
