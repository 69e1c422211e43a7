"""The foundation every capability stands on: paths (the vault layout, discovery, node
ids), config (``gitvault.yaml``), clock, git (the only module that runs git), records
(the append-only JSONL store), redact and files (atomic writes). Imports nothing of
gitvault but ``errors``.
"""
