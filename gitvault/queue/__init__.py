"""The prompt-request bus: the queue's state as a fold of append-only records, its
rules, the incremental log, DAG files, the commands (``Queue``) and the import of
agent-skill-bus's queue files.
"""
