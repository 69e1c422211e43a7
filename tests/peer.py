"""The peer, agent-skill-bus 1.4.0, run for differential tests: installed from npm by
bench/peer.py, with its clock frozen by faketime (it reads Date.now())."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.peer import GEN_RUNS, peer_cli

NOW = "2026-11-30T12:00:00.000Z"
RUNS_FILE = Path("skills") / "self-improving-skills" / "skill-runs.jsonl"


def require_tools() -> None:
    missing = [tool for tool in ("node", "npm", "faketime") if shutil.which(tool) is None]
    if missing:
        raise RuntimeError(f"differential tests need {', '.join(missing)} (.ci/run installs them)")


def peer(data_dir: Path, *args: str, now: str = NOW) -> Any:
    """Run the peer's CLI at the frozen time ``now``; its JSON output."""
    require_tools()
    frozen = now.replace("T", " ").split(".")[0].rstrip("Z")
    proc = subprocess.run(["faketime", "-f", frozen, *peer_cli(), *args, "--data-dir",
                           str(data_dir)], capture_output=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"peer {args} failed: {proc.stderr.decode()[-400:]}")
    return json.loads(proc.stdout)


def generate(data_dir: Path, count: int, seed: int, days: float = 30, skills: int = 50,
             end: str = NOW) -> Path:
    """Generated runs in the peer's data layout (bench/gen_runs.py)."""
    out = data_dir / RUNS_FILE
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(GEN_RUNS), "--count", str(count), "--out", str(out),
                    "--seed", str(seed), "--days", str(days), "--skills", str(skills),
                    "--end", end], check=True, capture_output=True)
    return out


def write_runs(data_dir: Path, runs: list[dict[str, Any]]) -> Path:
    out = data_dir / RUNS_FILE
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in runs))
    return out
