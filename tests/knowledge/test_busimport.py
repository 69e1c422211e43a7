"""Differential: knowledge files written by the real agent-skill-bus 1.4.0 (its
``KnowledgeWatcher``) import into a vault, and gitvault's ``diffs`` then answers what
the peer's ``diffs`` answers on the same folder."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import Runner
from tests.peer import require_tools

SCRIPT = """
import { KnowledgeWatcher } from %(index)s;
const w = new KnowledgeWatcher(%(dir)s);
await w.check('next-framework', async () => ({ version: '14.1.0' }));
await w.check('next-framework', async () => ({ version: '15.0.0', affectedSkills: ['*'],
                                              severity: 'critical' }));
await w.check('api-service', async () => ({ version: '2.0.0' }));
await w.check('api-service', async () => ({ version: '2.1.0', affectedSkills: ['api-caller'],
  customDiffs: [{ type: 'deprecation', detail: 'v1 auth removed in June',
                  affectedSkills: ['api-caller'], severity: 'high' }] }));
w.recordDiff({ source: 'blog', type: 'trend', detail: 'new caching pattern', severity: 'low' });
w.markProcessed([0]);
"""


def peer_diffs(data_dir: Path, *flags: str) -> object:
    from bench.peer import peer_cli

    proc = subprocess.run([*peer_cli(), "diffs", *flags, "--data-dir", str(data_dir)],
                          capture_output=True, check=True, timeout=60)
    return json.loads(proc.stdout)


def test_the_peers_knowledge_files_import_and_diffs_agree(gv: Runner, vault: Path,
                                                          tmp_path: Path) -> None:
    require_tools()
    from bench.peer import peer_cli

    index = Path(peer_cli()[1]).with_name("index.js")
    data_dir = tmp_path / "bus"
    folder = data_dir / "skills" / "knowledge-watcher"
    folder.mkdir(parents=True)
    script = SCRIPT % {"index": json.dumps(str(index)), "dir": json.dumps(str(folder))}
    subprocess.run(["node", "--input-type=module", "-e", script], check=True, timeout=60,
                   capture_output=True)
    imported = gv.ok("import-bus", str(data_dir), "--json").json()
    assert imported["knowledge"] == {"diffs": 4, "sources": 2, "skipped": 0}
    assert gv.ok("diffs", "--json").json() == peer_diffs(data_dir)
    ours = gv.ok("diffs", "--unprocessed", "--json").json()
    theirs = peer_diffs(data_dir, "--unprocessed")
    assert isinstance(theirs, list) and len(theirs) == 3
    keys = ("ts", "source", "type", "detail", "affectedSkills", "severity", "processed")
    assert [{k: d[k] for k in keys} for d in ours] == [{k: d[k] for k in keys} for d in theirs]
    assert gv.ok("import-bus", str(data_dir), "--json").json()["knowledge"] == \
        {"diffs": 0, "sources": 0, "skipped": 6}
