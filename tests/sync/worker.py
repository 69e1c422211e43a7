"""One node of the multi-clone test, as a real process: ``python -m tests.sync.worker
CLONE SEED ROUNDS PR,PR,...``. Each round does one random thing (append a run, patch
the shared skill or its own, start a PR) and syncs. Prints a JSON summary."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys


def gv(clone: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitvault", *args], cwd=clone,
                          capture_output=True, text=True, timeout=300)


def main() -> int:
    clone, seed, rounds, prs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    rng = random.Random(seed)
    node = os.environ["GITVAULT_NODE"]
    done = {"runs": 0, "patches": 0, "starts": 0, "syncs": 0, "retries": 0, "conflicts": 0,
            "lostStarts": 0, "errors": []}
    for number in range(rounds):
        action = rng.choice(["run", "run", "patch-shared", "patch-own", "start"])
        if action == "run":
            proc = gv(clone, "record-run", "--agent", node, "--skill", "shared", "--task",
                      f"task {number}", "--result", "success", "--score", "0.9")
            done["runs"] += proc.returncode == 0
        elif action.startswith("patch"):
            name = "shared" if action == "patch-shared" else f"own-{node}"
            proc = gv(clone, "skill", "patch", name, "--description", f"{name} skill",
                      "--content", f"{node} round {number}\n")
            done["patches"] += proc.returncode == 0
        else:
            proc = gv(clone, "start", rng.choice(prs.split(",")))
            done["starts"] += proc.returncode == 0
            if proc.returncode not in (0, 3):
                done["errors"].append(proc.stderr)
            proc = subprocess.CompletedProcess([], 0)
        if proc.returncode != 0:
            done["errors"].append(proc.stderr)
        sync = gv(clone, "sync", "--json")
        if sync.returncode != 0:
            done["errors"].append(sync.stderr)
            continue
        out = json.loads(sync.stdout)
        done["syncs"] += 1
        done["retries"] += out["retries"]
        done["conflicts"] += len(out["conflicts"])
        done["lostStarts"] += len(out["lostStarts"])
    print(json.dumps(done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
