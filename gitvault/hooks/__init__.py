"""Git hooks (SPEC §6): the shims installed into a repository (``shims``) and the
checks they run (``checks``)."""
