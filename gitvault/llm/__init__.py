"""The self-improving loop (SPEC §7): LLM providers behind one small Protocol in a
literal registry (a command, or the ``llm`` library), the prompts, tolerant parsers of
what models answer, and the three steps: ``extract`` (a session summary becomes a
curator skill), ``curate`` (merge skills, archiving the merged ones) and ``improve``
(seed §7's seven steps and the closed loop that judges earlier changes by runs).
Every change is an ordinary new version, reversible with ``rollback``.
Imports: ``skills``, ``runs``, ``knowledge``.
"""
