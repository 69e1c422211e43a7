"""The demo's watcher cycle: a source in ``gitvault.yaml`` pointing at a local PyPI-shaped
index (started here, on 127.0.0.1), a baseline, a major release, the diff and the prompt
request it routes to the queue."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from gitvault.core import git
from gitvault.knowledge import log
from gitvault.knowledge.localindex import LocalIndex
from gitvault.knowledge.watch import watch
from gitvault.vault.facade import Vault

SOURCE = """  sources:
    - id: requests
      type: pypi
      package: requests
      index: {url}
      tier: 1
      affectedSkills: [retry-with-backoff]
      severity: medium"""


def watcher_cycle(vault: Vault, say: Callable[[str], None]) -> dict[str, Any]:
    """Run one baseline check and one change; returns what the second watch routed."""
    with LocalIndex({"requests": "2.32.0"}) as index:
        config = vault.layout.config
        text = re.sub(r"^  sources: \[\].*$", SOURCE.format(url=index.url),
                      config.read_text("utf-8"), count=1, flags=re.M)
        config.write_text(text, "utf-8")
        git.commit_paths(vault.top, [vault.git_path(config)],
                         "demo: watch the requests package on a local index", {})
        vault = Vault(vault.root, node=vault.node)
        say(f"  gitvault.yaml watches 'requests' on {index.url} (a local index the demo runs)")
        first = watch(vault.layout, vault.node, vault.config)
        say(f"  first check: baseline {first['checked'][0]['value']} (no diff)")
        index.versions["requests"] = "3.0.0"
        second = watch(vault.layout, vault.node, vault.config, source_id="requests")
    for diff in second["diffs"]:
        say(f"  requests 3.0.0 released -> {diff['type']} ({diff['severity']}): {diff['detail']}")
    for mark in second["routed"]:
        say(f"  routed to the queue: prompt request {mark['pr']} at {mark['priority']} "
            "(see 'gitvault dispatch')")
    stats = log.load(vault.layout).stats()
    say(f"  gitvault diffs: {stats['sources']} source, {stats['totalDiffs']} diff, "
        f"{stats['unprocessed']} unprocessed (a routed diff is marked by an appended record)")
    vault.commit_logs("gitvault: demo watcher records")
    return {"diffs": second["diffs"], "routed": second["routed"]}
