"""SPEC §9: ``search`` and ``context`` over 10,000 skills take at most 2x their time
over 100 skills (warm), and an index refresh after changing one skill in 10,000 is
cheap.

Builds two vaults whose skill folders are written straight to disk (no 10,000
commits), with the same event log in both, then times:

- the CLI as a user runs it (``gitvault search --json``, ``gitvault context
  --json``), warm: index built, files in the page cache; the median of several
  runs, interleaved between the two vaults so that other load hits both alike;
- the same calls in-process (what an MCP server pays per call);
- the index: a build from nothing, a refresh after one skill changed, and a
  search without any index (every file read), for scale.

The event log holds ``--injections`` inject records (default 500), each with its
outcome (2 in 3 successful), their prompts drawn from the library's words: the
history the index folds into evidence (issue 16: 100,000 injections).

Usage: ``python bench/bench_search.py [--small 100] [--large 10000] [--runs 9]
[--injections 100000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

from bench.peer import gitvault_env  # noqa: E402
from gitvault.core import records  # noqa: E402
from gitvault.core.clock import now  # noqa: E402
from gitvault.retrieval import inject as retrieval  # noqa: E402
from gitvault.retrieval.engine import rank_skills, refresh_index  # noqa: E402
from gitvault.retrieval.index import INDEX_FILE  # noqa: E402
from gitvault.vault.facade import Vault  # noqa: E402
from gitvault.vault.init import init_vault  # noqa: E402

LIBRARY = REPO / "tests" / "data" / "retrieval" / "skills.yaml"
QUERIES = ["docker build is slow and reinstalls packages", "pod CrashLoopBackOff exit code 137",
           "merge conflict after git pull", "flaky pytest test fails in CI",
           "SSL certificate verify failed with requests"]
INJECTIONS = 500  # inject records (each with an outcome), the same in every vault


def skill_text(name: str, description: str, kind: str, tags: str, body: str) -> str:
    meta = {"version": "1", "kind": kind, "provenance": "agent", "state": "active",
            "trigger": description, "tags": tags, "sensitive": "false"}
    head = yaml.safe_dump({"name": name, "description": description, "metadata": meta},
                          sort_keys=False, width=88)
    return f"---\n{head}---\n{body}"


def make_vault(root: Path, count: int, seed: int = 7, injections: int = INJECTIONS) -> Vault:
    """A vault with ``count`` skills derived from the labelled library (each a base
    skill with words of other skills mixed in, so terms spread like real ones)."""
    init_vault(root)
    base = yaml.safe_load(LIBRARY.read_text("utf-8"))
    words = sorted({w for item in base for w in (item["description"] + " " + item["body"]).split()
                    if w.isalpha() and len(w) > 3})
    rng = random.Random(seed)
    skills = root / "skills"
    for i in range(count):
        item = base[i % len(base)]
        name = f"{item['name']}-{i}"
        extra = " ".join(rng.choice(words) for _ in range(12))
        lines = item["body"].splitlines()
        rng.shuffle(lines)
        body = "\n".join(lines) + f"\n\nNotes: {extra}.\n"
        kind = item.get("kind", "procedure")
        folder = skills / name
        folder.mkdir()
        (folder / "SKILL.md").write_text(
            skill_text(name, f"{item['description']} ({extra.split()[0]})", kind,
                       item.get("tags", ""), body), "utf-8")
        if item.get("code"):
            (folder / "skill.py").write_text(item["code"], "utf-8")
    past = time.time() - 3600  # settled files, as in a vault used for a while
    for path in skills.glob("*/*"):
        os.utime(path, (past, past))
    vault = Vault.open(root, "bench")
    names = [f"{base[i % len(base)]['name']}-{i}" for i in range(min(count, 200))]
    prompts = random.Random(seed + 1)
    batch: list[dict[str, object]] = []
    log = vault.layout.log_file("events", vault.node, now())
    for n in range(injections):  # as vault.append writes them, 2,000 records a write
        picked = [f"{names[(n + j) % len(names)]}@v1" for j in range(3)]
        prompt = " ".join(prompts.choice(words) for _ in range(10))
        injected = records.stamp({"op": "inject", "prompt": prompt, "skills": picked}, vault.node)
        batch.append(injected)
        batch.append(records.stamp({"op": "outcome", "injection": injected["id"],
                                    "skills": picked, "success": n % 3 != 0, "reason": None},
                                   vault.node))
        if len(batch) >= 2000:
            records.append_records(log, batch)
            batch = []
    if batch:
        records.append_records(log, batch)
    return vault


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def cli(env: dict[str, str], cwd: Path, *args: str) -> Callable[[], object]:
    exe = Path(sys.executable).parent / "gitvault"
    argv = [str(exe)] if exe.exists() else [sys.executable, "-m", "gitvault"]

    def run() -> object:
        proc = subprocess.run([*argv, *args], cwd=cwd, env=env, capture_output=True)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr.decode())
        return json.loads(proc.stdout)
    return run


class Setup:
    """One vault of ``size`` skills, its index built, ready to time."""

    def __init__(self, size: int, work: Path, injections: int) -> None:
        self.size = size
        self.root = work / f"vault-{size}"
        self.vault = make_vault(self.root, size, injections=injections)
        self.skills = self.vault.layout.skills
        cache = self.vault.layout.cache
        assert cache is not None
        self.cache = cache
        self.env = gitvault_env(GITVAULT_NODE="bench", HOME=str(work),
                                GIT_CONFIG_GLOBAL=str(work / ".gitconfig"))
        events = self.vault.layout.stream("events")
        self.build = timed(lambda: refresh_index(self.skills, self.cache, events))
        self.edits = 0

    def query(self, i: int) -> str:
        return QUERIES[i % len(QUERIES)]

    def change_one(self) -> None:
        """Edit one skill by hand (a new signature and content)."""
        folders = sorted(p for p in self.skills.iterdir() if not p.name.startswith("."))
        path = folders[self.size // 2] / "SKILL.md"
        self.edits += 1
        text = path.read_text("utf-8").split("\n\nEdit ")[0]
        path.write_text(f"{text}\n\nEdit {self.edits}\n", "utf-8")

    def refresh_after_change(self) -> float:
        self.change_one()
        start = time.perf_counter()
        report = refresh_index(self.skills, self.cache)
        elapsed = time.perf_counter() - start
        assert (report.updated, report.added, report.removed) == (1, 0, 0), report
        return elapsed


METRICS: list[tuple[str, Callable[[Setup, int], float], bool]] = [
    # (label, one timed run, part of the <= 2x target)
    ("search CLI (warm)", lambda s, i: timed(cli(s.env, s.root, "search", s.query(i), "--json")),
     True),
    ("context CLI (warm)", lambda s, i: timed(cli(s.env, s.root, "context", s.query(i),
                                                   "--json")), True),
    ("search in-process (warm)", lambda s, i: timed(lambda: retrieval.search(s.vault, s.query(i))),
     False),
    ("context in-process (warm)",
     lambda s, i: timed(lambda: retrieval.context(s.vault, s.query(i))), False),
    ("index check, nothing changed",
     lambda s, i: timed(lambda: refresh_index(s.skills, s.cache, s.vault.layout.stream("events"))),
     False),
    ("index refresh, 1 skill changed", lambda s, i: s.refresh_after_change(), False),
    ("search CLI right after 1 change",
     lambda s, i: (s.change_one(), timed(cli(s.env, s.root, "search", s.query(i), "--json")))[1],
     False),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--large", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--injections", type=int, default=INJECTIONS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gitvault-bench-search-") as tmp:
        work = Path(tmp)
        setups = [Setup(args.small, work, args.injections),
                  Setup(args.large, work, args.injections)]
        rows = [["", f"{args.small:,} skills", f"{args.large:,} skills", "ratio", "target"]]
        rows.append(["index build with the events fold (from nothing)",
                     *(f"{s.build * 1000:.0f} ms" for s in setups), "", ""])
        files = [timed(lambda s=s: rank_skills(s.skills, QUERIES[0], cache_dir=None))
                 for s in setups]
        rows.append(["search without the index (every file read)",
                     *(f"{t * 1000:.0f} ms" for t in files), f"{files[1] / files[0]:.1f}x", ""])
        for label, run, target in METRICS:
            for s in setups:
                run(s, 0)  # warm: page cache, index, racy files settled
            times: list[list[float]] = [[], []]
            for i in range(args.runs):  # interleaved, so load on the machine hits both
                for n, s in enumerate(setups):
                    times[n].append(run(s, i))
            small, large = (statistics.median(t) for t in times)
            verdict = ("ok" if large / small <= 2 else "MISSED") if target else ""
            rows.append([label, f"{small * 1000:.1f} ms", f"{large * 1000:.1f} ms",
                         f"{large / small:.2f}x", f"<= 2x {verdict}" if target else ""])
        sizes = [(s.cache / INDEX_FILE).stat().st_size / 1e6 for s in setups]
        rows.append(["index file size", *(f"{m:.1f} MB" for m in sizes), "", ""])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    print(f"history: {args.injections:,} injections, each with an outcome; "
          f"median of {args.runs} interleaved runs; {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
