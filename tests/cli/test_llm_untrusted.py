"""The loop against careless use and hostile answers: two ``improve`` at once, a
curator answer whose merges overlap, the clock at the calendar's edges."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_llm import T0, T1, at, degrading, improve_answer, records, stand_in_llm
from tests.conftest import Runner, snapshot
from tests.llm.scripted import CURATE, IMPROVE, Scripted

SLOW = r'''
import sys, time
sys.stdin.read()
time.sleep(3)
sys.stdout.write(open(sys.argv[1]).read())
'''


def test_two_improves_at_once_make_one_auto_edit_a_day(gv: Runner, vault: Path,
                                                        tmp_path: Path) -> None:
    degrading(gv)
    answer = tmp_path / "answer.txt"
    answer.write_text(improve_answer())
    bot = tmp_path / "slow.py"
    bot.write_text(SLOW)
    env = {**gv.env, **at(T1), "GITVAULT_LLM_CMD": f"{sys.executable} {bot} {answer}"}
    procs = [subprocess.Popen([sys.executable, "-m", "gitvault", "improve", "--json"], cwd=vault,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    auto = [c for c in gv.git("log", "--format=%s").splitlines() if c.startswith("gitvault: improve")]
    assert auto == ["gitvault: improve api-caller v2"], outs
    actions = sorted(r["action"] for r in records(vault) if r.get("op") == "improve")
    assert actions == ["applied", "proposed"]


def test_a_curator_answer_whose_merges_overlap_refuses_the_later_one(
        gv: Runner, vault: Path, bot: Scripted) -> None:
    for name in ("aa", "bb", "cc"):
        gv.ok("skill", "create", name, "--description", f"skill {name}", "--content",
              f"body {name}", env=at(T0))
    bot.answer([(CURATE, "MERGE: aa, bb\nNEW_NAME: ab\nCONTENT:\nmerged ab\n---\n"
                         "MERGE: aa, cc\nNEW_NAME: ac\nCONTENT:\nmerged ac\n")])
    data = gv.ok("curate", "--json", env=at(T1, bot)).json()
    assert [m["action"] for m in data["merges"]] == ["merged", "refused"]
    assert "'aa' is in an earlier merge of this answer" in data["merges"][1]["reason"]
    listed = {s["name"]: s["state"] for s in
              gv.ok("skill", "list", "--state", "all", "--json").json()["skills"]}
    assert listed == {"ab": "active", "aa": "archived", "bb": "archived", "cc": "active"}


def test_a_curator_answer_reusing_a_new_name_refuses_the_later_merge(
        gv: Runner, vault: Path, bot: Scripted) -> None:
    for name in ("aa", "bb", "cc", "dd"):
        gv.ok("skill", "create", name, "--description", f"skill {name}", "--content",
              f"body {name}", env=at(T0))
    bot.answer([(CURATE, "MERGE: aa, bb\nNEW_NAME: ab\nCONTENT:\nmerged ab\n---\n"
                         "MERGE: cc, dd\nNEW_NAME: ab\nCONTENT:\nmerged cd\n")])
    before = snapshot(vault)
    dry = gv.ok("curate", "--dry-run", "--json", env=at(T1, bot)).json()
    assert [m["action"] for m in dry["merges"]] == ["would_merge", "refused"]
    assert snapshot(vault) == before
    data = gv.ok("curate", "--json", env=at(T1, bot)).json()
    assert [m["action"] for m in data["merges"]] == ["merged", "refused"]
    listed = {s["name"]: s["state"] for s in
              gv.ok("skill", "list", "--state", "all", "--json").json()["skills"]}
    assert listed["cc"] == "active" and listed["dd"] == "active"


@pytest.fixture
def bot(tmp_path: Path) -> Scripted:
    return Scripted(tmp_path / "bot")


@pytest.mark.parametrize(("now", "args"), [
    ("0001-01-01T00:00:00Z", ()),
    ("9999-12-31T23:59:59Z", ()),
    ("2026-12-01T10:00:00Z", ("--days", "99999999")),
    ("2026-12-01T10:00:00Z", ("--days", "1000000000")),
])
def test_improve_at_the_calendar_edges_is_not_a_crash(gv: Runner, vault: Path, bot: Scripted,
                                                      now: str, args: tuple[str, ...]) -> None:
    degrading(gv)
    bot.answer([(IMPROVE, improve_answer())])
    result = gv("improve", "--dry-run", "--json", *args,
                env={"GITVAULT_NOW": now, **bot.env})
    assert result.code == 0, result.err


def test_a_gigantic_proposal_is_not_applied_automatically(gv: Runner, vault: Path,
                                                          bot: Scripted) -> None:
    degrading(gv)
    huge = "\n".join(f"{i}. " + "do the thing " * 8 for i in range(5000))  # ~130k tokens
    bot.answer([(IMPROVE, improve_answer(content=huge))])
    data = gv.ok("improve", "--json", env=at(T1, bot)).json()
    decision = data["decisions"][0]
    assert decision["action"] == "proposed"
    assert any("over extract.max_tokens" in r for r in decision["reasons"])
    assert gv.ok("skill", "show", "api-caller", "--json").json()["version"] == 1


def test_an_llm_library_model_that_hangs_is_cut_at_the_timeout(gv: Runner, vault: Path,
                                                              tmp_path: Path) -> None:
    env = {**at(T1), **stand_in_llm(gv, tmp_path,
        "import time\n"
        "class _Response:\n    def text(self):\n        time.sleep(60)\n        return 'NONE'\n"
        "class _Model:\n    def prompt(self, prompt):\n        return _Response()\n"
        "def get_model(name):\n    return _Model()\n"), "GITVAULT_LLM_TIMEOUT": "1"}
    proc = gv.process()
    proc.git("config", "gitvault.llm-model", "slow")
    before = snapshot(vault)
    started = time.monotonic()
    result = proc("extract", "--summary", "-", input="s", env=env)
    assert time.monotonic() - started < 20
    assert result.code == 2 and "the llm model 'slow' gave no answer within 1 s" in result.err
    assert snapshot(vault) == before
