"""The ``Vault`` facade (the one object a caller opens: it composes the capability
packages, importing each lazily), ``init``, ``doctor``, status and commit, the import of
an agent-skill-bus folder, the ``skill_patch`` tool protocol and the demo.
"""
