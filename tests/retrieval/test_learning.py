"""gitvault.retrieval.learning: the events log folded into the search index, on real
files in temp dirs: incremental per file, restarted when a file is rewritten, the same
answer with and without the index."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitvault.retrieval import embed
from gitvault.retrieval.engine import rank_skills
from gitvault.retrieval.index import INDEX_FILE, Index
from tests.retrieval.test_search import write_skill

TS = "2026-01-05T10:00:00.000Z"


def line(**record: Any) -> str:
    return json.dumps({"ts": TS, "node": "n1", **record}) + "\n"


def inject(rid: str, prompt: str, *skills: str) -> str:
    return line(id=rid, op="inject", prompt=prompt, skills=[f"{s}@v1" for s in skills])


def outcome(rid: str, injection: str, ok: bool, *skills: str) -> str:
    return line(id=rid, op="outcome", injection=injection, skills=[f"{s}@v1" for s in skills],
                success=ok, reason=None)


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    skills = tmp_path / "skills"
    write_skill(skills, "weather-tool", "Provide the latest weather information")
    write_skill(skills, "trip-tool", "Hotel bookings in Toronto and travel planning")
    events = tmp_path / "logs" / "events"
    (events / "2026-01").mkdir(parents=True)
    return skills, events, tmp_path / "cache"


def ranked(skills: Path, events: Path, cache: Path | None, query: str) -> list[tuple[str, float]]:
    ranking = rank_skills(skills, query, cache_dir=cache, events_dir=events, explain=True)
    return [(h.name, round(h.score, 9)) for h in ranking.hits]


def refresh(events: Path, cache: Path, skills: Path) -> Any:
    with Index(cache / INDEX_FILE, skills, events) as index:
        index.refresh()
        return index.refresh_events()


def test_success_lifts_and_index_and_files_agree(setup: tuple[Path, Path, Path]) -> None:
    skills, events, cache = setup
    assert [n for n, _ in ranked(skills, events, cache, "UV index Toronto")] == ["trip-tool"]
    (events / "2026-01" / "n1.jsonl").write_text(
        inject("i1", "UV index in Toronto today", "weather-tool")
        + outcome("o1", "i1", True, "weather-tool")
        + inject("i2", "Toronto hotel for two nights", "weather-tool")
        + outcome("o2", "i2", False, "weather-tool"), "utf-8")
    with_index = ranked(skills, events, cache, "UV index Toronto")
    assert [n for n, _ in with_index] == ["weather-tool", "trip-tool"]
    assert ranked(skills, events, None, "UV index Toronto") == with_index
    hotel = ranked(skills, events, cache, "Toronto hotel")
    assert [n for n, _ in hotel] == ["trip-tool"]  # its Toronto success is cancelled out
    assert ranked(skills, events, None, "Toronto hotel") == hotel


def test_fold_reads_only_what_was_appended(setup: tuple[Path, Path, Path]) -> None:
    skills, events, cache = setup
    log = events / "2026-01" / "n1.jsonl"
    log.write_text(inject("i1", "UV index", "weather-tool")
                   + outcome("o1", "i1", True, "weather-tool"), "utf-8")
    first = refresh(events, cache, skills)
    assert (first.files, first.records, first.restarted) == (1, 2, False)
    again = refresh(events, cache, skills)
    assert (again.files, again.records) == (0, 0)
    with log.open("a", encoding="utf-8") as fh:
        fh.write(inject("i2", "sunscreen", "weather-tool"))
        fh.write('{"id": "i3", "op": "inject"')  # a write in progress: not read yet
    grown = refresh(events, cache, skills)
    assert (grown.files, grown.records, grown.restarted) == (1, 1, False)
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f', "ts": "{TS}", "prompt": "sunburn", "skills": ["weather-tool@v1"]}}\n')
        fh.write(outcome("o3", "i3", True, "weather-tool"))
    assert refresh(events, cache, skills).records == 2
    hits = rank_skills(skills, "sunburn", cache_dir=cache, events_dir=events).hits
    assert [h.name for h in hits] == ["weather-tool"]


def test_a_rewritten_file_starts_the_fold_again(setup: tuple[Path, Path, Path]) -> None:
    skills, events, cache = setup
    log = events / "2026-01" / "n1.jsonl"
    log.write_text(inject("i1", "sunscreen", "weather-tool")
                   + outcome("o1", "i1", True, "weather-tool"), "utf-8")
    assert [n for n, _ in ranked(skills, events, cache, "sunscreen")] == ["weather-tool"]
    log.write_text(inject("i9", "nothing to see", "weather-tool"), "utf-8")  # not an append
    report = refresh(events, cache, skills)
    assert report.restarted and report.records == 1
    assert ranked(skills, events, cache, "sunscreen") == []
    log.unlink()
    assert refresh(events, cache, skills).restarted


def test_outcome_before_its_injection_and_duplicates(setup: tuple[Path, Path, Path]) -> None:
    skills, events, cache = setup
    # another node's outcome file sorts before the injection's file
    (events / "2026-01" / "a-node.jsonl").write_text(
        outcome("o1", "i1", True, "weather-tool") + outcome("o1", "i1", True, "weather-tool"),
        "utf-8")
    (events / "2026-01" / "b-node.jsonl").write_text(
        inject("i1", "sunscreen", "weather-tool") + inject("i1", "sunscreen", "weather-tool"),
        "utf-8")
    for cache_dir in (cache, None):
        ranking = rank_skills(skills, "sunscreen", cache_dir=cache_dir, events_dir=events)
        assert [h.name for h in ranking.hits] == ["weather-tool"]
    with Index(cache / INDEX_FILE, skills, events) as index:
        index.refresh_events()
        assert index.learned(["weather-tool"]) == {
            "weather-tool": {"usage": 1, "success": 1, "failure": 0}}
        assert index.conn.execute("SELECT pos FROM evidence WHERE term = 'sunscreen'"
                                  ).fetchall() == [(1,)]
        assert index.conn.execute("SELECT applied FROM outcomes").fetchall() == [(1,)]


def test_bad_event_lines_are_warnings(setup: tuple[Path, Path, Path]) -> None:
    skills, events, cache = setup
    log = events / "2026-01" / "n1.jsonl"
    log.write_text("not json\n" + json.dumps({"op": "inject", "id": "x"}) + "\n"
                   + inject("i1", "sunscreen", "weather-tool"), "utf-8")
    for cache_dir in (cache, None):
        ranking = rank_skills(skills, "sunscreen", cache_dir=cache_dir, events_dir=events)
        assert ranking.hits == []  # an injection without an outcome is no evidence
        assert ranking.warnings == [f"{log}:1: invalid JSON: Expecting value",
                                    f"{log}:2: missing ts"]


def test_fuse_adds_dense_matches_and_scales_lexical_scores() -> None:
    fused = embed.fuse({"a": 4.0, "b": 2.0}, {"a": 0.1, "b": 0.9, "c": 0.5, "d": -0.2},
                       weight=0.5)
    assert set(fused) == {"a", "b", "c"}  # d: no lexical match and a negative cosine
    assert fused["a"] == pytest.approx(0.5 * 1.0 + 0.5 * 0.1)
    assert fused["b"] == pytest.approx(0.5 * 0.5 + 0.5 * 0.9)
    assert fused["c"] == pytest.approx(0.25)
    vectors = embed.load("hash:32").encode(["weather in Toronto", "Toronto weather", "hotel"])
    assert vectors[0] == vectors[1] and len(vectors[0]) == 32
    assert embed.cosines(vectors[0], [("same", vectors[1])])["same"] == pytest.approx(1.0)


def test_dense_scores_count_the_prompts_a_skill_succeeded_with(
        setup: tuple[Path, Path, Path]) -> None:
    skills, events, cache = setup
    embedder = embed.load("hash:64")
    query = "sunscreen UV"

    def dense() -> dict[str, float]:
        found = {}
        for cache_dir in (cache, None):  # the index (float32 vectors) agrees with the files
            hits = rank_skills(skills, query, cache_dir=cache_dir, events_dir=events,
                               embedder=embedder).hits
            found[cache_dir] = {h.name: round(h.dense or 0.0, 6) for h in hits}
        assert found[cache] == found[None]
        return found[cache]

    vectors = embedder.encode(
        [query, embed.doc_text("weather-tool", "Provide the latest weather information")])
    own = embed.cosines(vectors[0], [("doc", vectors[1])])["doc"]  # to its description
    before = dense()
    (events / "2026-01" / "n1.jsonl").write_text(
        inject("i1", query, "weather-tool") + outcome("o1", "i1", True, "weather-tool")
        + inject("i2", query, "trip-tool") + outcome("o2", "i2", False, "trip-tool"), "utf-8")
    after = dense()
    # the same prompt succeeded with weather-tool: its cosine 1.0 is averaged in; the
    # failed one teaches trip-tool nothing
    assert after["weather-tool"] == pytest.approx((own + 1.0) / 2, abs=1e-6)
    assert after.get("trip-tool") == before.get("trip-tool")
    with Index(cache / INDEX_FILE, skills, events) as index:
        cached = index.conn.execute("SELECT injection, model FROM prompt_vectors").fetchall()
    assert cached == [("i1", "hash:64")]  # embedded once, kept by injection id


def test_an_outcome_waits_across_refreshes_for_its_injection(
        setup: tuple[Path, Path, Path]) -> None:
    skills, events, cache = setup
    (events / "2026-01" / "n1.jsonl").write_text(outcome("o1", "i1", True, "weather-tool"),
                                                 "utf-8")
    assert ranked(skills, events, cache, "sunscreen") == []  # folded: no injection yet
    (events / "2026-01" / "n2.jsonl").write_text(inject("i1", "sunscreen", "weather-tool"),
                                                 "utf-8")
    report = refresh(events, cache, skills)
    assert (report.files, report.records, report.restarted) == (1, 1, False)
    assert [n for n, _ in ranked(skills, events, cache, "sunscreen")] == ["weather-tool"]
    assert ranked(skills, events, None, "sunscreen") == ranked(skills, events, cache, "sunscreen")
