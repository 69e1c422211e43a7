"""Retrieval that learns from outcomes (SPEC §4.1), end to end: the real CLI in real
git repositories. Successful injections' prompts lift their skills for queries phrased
like them, failures weigh against, another node's synced events count as soon as their
file appears, and ``search --explain`` says why."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import Runner, isolated_env


def create(gv: Runner, name: str, description: str, content: str = "") -> None:
    gv.ok("skill", "create", name, "--description", description, "--content", content)


def search(gv: Runner, query: str, *extra: str) -> list[dict[str, Any]]:
    return gv.ok("search", query, "--json", *extra).json()["results"]


def names(gv: Runner, query: str) -> list[str]:
    return [r["name"] for r in search(gv, query)]


def succeed(gv: Runner, prompt: str, skill: str, ok: bool = True) -> str:
    """An agent given ``skill`` for ``prompt`` reports the task's result."""
    data = gv.ok("context", prompt, "--pin", f"{skill}@v1", "-k", "1", "--json").json()
    gv.ok("outcome", data["injection"], "--success" if ok else "--fail")
    return str(data["injection"])


def travel_vault(gv: Runner) -> None:
    create(gv, "weather-tool", "Provide the latest weather information.", "Ask for a city.")
    create(gv, "trip-tool", "Hotel bookings in Toronto, Paris and Tokyo; travel planning.",
           "Plan the trip.")


SUNSCREEN = ["Do I need sunscreen in Toronto today, is the UV index high?",
             "What's the UV index in Paris this afternoon?",
             "Should I wear sunscreen in Tokyo tomorrow?"]


def test_successful_prompts_teach_search_and_context(gv: Runner, vault: Path) -> None:
    travel_vault(gv)
    assert names(gv, "UV index and sunscreen for Toronto") == ["trip-tool"]  # only "toronto"
    for prompt in SUNSCREEN:
        succeed(gv, prompt, "weather-tool")
    assert names(gv, "UV index and sunscreen for Toronto") == ["weather-tool", "trip-tool"]
    data = gv.ok("context", "sunscreen and the UV index in Tokyo", "-k", "1", "--json").json()
    assert [s["name"] for s in data["skills"]] == ["weather-tool"]
    record = [json.loads(line) for path in sorted((vault / "logs" / "events").rglob("*.jsonl"))
              for line in path.read_text("utf-8").splitlines()][-1]
    assert record["op"] == "inject" and record["skills"] == ["weather-tool@v1"]
    why = record["why"]  # why it was picked: the evidence of past successes
    assert why[0]["skill"] == "weather-tool@v1" and why[0]["score"] > 0
    assert set(why[0]["fields"]) == {"evidence"}
    assert {"sunscreen", "uv", "index"} <= set(why[0]["terms"])


def test_failures_weigh_against_a_skill_for_queries_like_them(gv: Runner, vault: Path) -> None:
    for name in ("alpha-retry", "beta-retry"):
        create(gv, name, "Retry flaky network calls with backoff", "Back off and retry.")
    assert names(gv, "retry the flaky network upload") == ["alpha-retry", "beta-retry"]
    for prompt in ("retry the flaky network upload to S3", "flaky upload keeps failing, retry"):
        succeed(gv, prompt, "alpha-retry", ok=False)
        succeed(gv, prompt, "beta-retry", ok=True)
    hits = search(gv, "retry the flaky network upload", "--explain")
    assert [h["name"] for h in hits] == ["beta-retry", "alpha-retry"]
    alpha = hits[1]["explain"]
    against = {t["term"]: t.get("against", 0) for t in alpha["terms"]}
    assert against["flaki"] > 0 and against["retri"] > 0  # stems of the failed prompts
    assert "upload" not in against  # only in prompts, and those failed: no evidence for it
    assert "against" not in json.dumps(hits[0]["explain"])


def test_events_from_another_node_count_once_their_file_appears(gv: Runner, vault: Path) -> None:
    travel_vault(gv)
    assert names(gv, "sunscreen UV index Toronto") == ["trip-tool"]  # index built, no history
    synced = vault / "logs" / "events" / "2026-01" / "laptop.jsonl"
    synced.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for n, prompt in enumerate(SUNSCREEN):
        inject = f"01JAAAAAAAAAAAAAAAAAAAAAA{n}"
        lines.append({"id": inject, "ts": f"2026-01-0{n + 1}T10:00:00.000Z", "op": "inject",
                      "prompt": prompt, "skills": ["weather-tool@v1"], "node": "laptop"})
        lines.append({"id": f"01JBBBBBBBBBBBBBBBBBBBBBB{n}", "ts": f"2026-01-0{n + 1}T10:05:00.000Z",
                      "op": "outcome", "injection": inject, "skills": ["weather-tool@v1"],
                      "success": True, "reason": None, "node": "laptop"})
    synced.write_text("".join(json.dumps(r) + "\n" for r in lines), "utf-8")
    assert names(gv, "sunscreen UV index Toronto") == ["weather-tool", "trip-tool"]
    listed = gv.ok("skill", "show", "weather-tool", "--json").json()["stats"]
    assert (listed["usage"], listed["success"]) == (3, 3)


def test_explain_text_and_json(gv: Runner, vault: Path) -> None:
    travel_vault(gv)
    succeed(gv, "UV index in Toronto", "weather-tool")
    hits = search(gv, "weather and UV index", "--explain")
    top = hits[0]
    assert top["name"] == "weather-tool" and set(top) == {"name", "version", "state", "score",
                                                          "explain"}
    explain = top["explain"]
    assert {"name", "evidence"} <= set(explain["fields"])
    terms = {t["term"]: t for t in explain["terms"]}
    assert set(terms) == {"weather", "uv", "index"}
    assert set(terms["weather"]["fields"]) == {"name", "trigger", "description"}
    assert set(terms["uv"]["fields"]) == {"evidence"}
    assert abs(sum(t["score"] for t in explain["terms"]) - explain["relevance"]) < 1e-3
    assert abs(explain["relevance"] * explain["boost"] - top["score"]) < 1e-3
    assert "explain" not in search(gv, "weather")[0]  # only when asked for
    text = gv.ok("search", "weather and UV index", "--explain").out.splitlines()
    assert text[0].split()[1] == "weather-tool"
    assert text[1].strip().startswith("relevance ") and "fields: name" in text[1]
    assert any(line.split()[0] == "uv" and "(evidence" in line for line in text[2:])


def test_learning_survives_a_corrupt_or_deleted_index(gv: Runner, vault: Path) -> None:
    travel_vault(gv)
    for prompt in SUNSCREEN:
        succeed(gv, prompt, "weather-tool")
    before = search(gv, "sunscreen in Toronto", "--explain")
    index = vault / ".git" / "gitvault" / "search.sqlite"
    assert index.is_file()
    index.write_bytes(b"not a database" * 100)
    assert search(gv, "sunscreen in Toronto", "--explain") == before
    index.unlink()
    assert search(gv, "sunscreen in Toronto", "--explain") == before
    assert index.is_file()


def test_dense_retrieval_fuses_a_registered_provider(gv: Runner, vault: Path) -> None:
    travel_vault(gv)
    lexical = search(gv, "weather in Toronto")
    gv.git("config", "gitvault.embed-model", "hash:64")  # the built-in stand-in provider
    fused = search(gv, "weather in Toronto", "--explain")
    assert {h["name"] for h in fused} == {h["name"] for h in lexical}
    assert all(-1 <= h["explain"]["dense"] <= 1 for h in fused)
    assert fused[0]["explain"]["relevance"] <= 1.0  # fused scores are scaled to [0, 1]
    gv.git("config", "gitvault.embed-model", "hash:abc")
    bad = gv("search", "weather")
    assert bad.code == 2 and "hash:abc: give a dimension" in bad.err
    gv.git("config", "gitvault.embed-model", "no-such-local-model")
    missing = gv("search", "weather")
    assert missing.code == 2 and "gitvault.embed-model" in missing.err
    assert "Traceback" not in missing.err


def test_only_the_clones_own_config_turns_dense_retrieval_on(gv: Runner, vault: Path) -> None:
    """A global setting is ignored, whatever else the clone's config file mentions
    (it used to count only when some unrelated value contained 'embed-model')."""
    travel_vault(gv)
    gv.git("config", "--global", "gitvault.embed-model", "hash:64")
    assert all("dense" not in h["explain"] for h in search(gv, "weather in Toronto", "--explain"))
    gv.git("config", "remote.x.url", "https://example.com/embed-model.git")
    assert all("dense" not in h["explain"] for h in search(gv, "weather in Toronto", "--explain"))
    gv.git("config", "gitvault.embed-model", "hash:64")
    assert all("dense" in h["explain"] for h in search(gv, "weather in Toronto", "--explain"))


def test_help_and_record_run_do_not_import_the_index(tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    root = tmp_path / "vault"
    subprocess.run([sys.executable, "-m", "gitvault", "init", str(root)], env=env, check=True,
                   capture_output=True)
    for args in (["--help"], ["record-run", "--agent", "a", "--skill", "s", "--task", "t",
                              "--result", "success"]):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "gitvault", *args],
                              env=env, cwd=root, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        loaded = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()}
        assert not {m for m in loaded if m.startswith("gitvault.retrieval")}, args
        assert "sqlite3" not in loaded, args
