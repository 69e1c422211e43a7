"""The parsers read what real models answer: prose around the answer, code fences,
markdown emphasis, other key spellings, JSON or KEY: value lines; anything else is an
error naming what was expected."""

from __future__ import annotations

import pytest

from gitvault.errors import LLMError
from gitvault.llm.parsers import parse_curate, parse_extract, skill_name
from gitvault.llm.proposals import parse_improve


@pytest.mark.parametrize("answer", [
    "SKILL_NAME: retry-flaky-tests\nTRIGGER: When a CI test fails intermittently\nCONTENT:\n"
    "## Steps\n1. Rerun once.\n2. Quarantine it.\n",
    "Sure! Looking at the session, there is a reusable rule.\n\n**Skill name:** Retry Flaky "
    "Tests\n**Trigger:** When a CI test fails intermittently\n**Content:**\n```markdown\n"
    "## Steps\n1. Rerun once.\n2. Quarantine it.\n```\n",
    "Here it is:\n```\nSKILL_NAME: retry_flaky_tests\nTRIGGER: When a CI test fails "
    "intermittently\nCONTENT:\n## Steps\n1. Rerun once.\n2. Quarantine it.\n```\nHope this helps!",
    "### SKILL_NAME: `retry-flaky-tests`\n### TRIGGER: When a CI test fails intermittently\n"
    "### CONTENT:\n## Steps\n1. Rerun once.\n2. Quarantine it.",
    "- **SKILL_NAME**: retry-flaky-tests\n- **TRIGGER**: When a CI test fails intermittently\n"
    "- **CONTENT**: ## Steps\n1. Rerun once.\n2. Quarantine it.",
])
def test_extract_answers_as_models_write_them(answer: str) -> None:
    found = parse_extract(answer)
    assert found is not None
    assert skill_name(found.name) == "retry-flaky-tests"
    assert found.trigger == "When a CI test fails intermittently"
    assert found.content == "## Steps\n1. Rerun once.\n2. Quarantine it."


def test_extract_keeps_code_fences_inside_the_content() -> None:
    found = parse_extract("```\nSKILL_NAME: run-it\nTRIGGER: t\nCONTENT:\n## Run\n```bash\nmake\n"
                          "```\nThen check.\n```\nThat's all.")
    assert found is not None and found.content == "## Run\n```bash\nmake\n```\nThen check."


@pytest.mark.parametrize("answer", ["NONE", "NONE.\n", "**NONE**", "After reviewing the "
                                    "session, nothing is reusable.\n\nNONE", "none"])
def test_extract_none(answer: str) -> None:
    assert parse_extract(answer) is None


@pytest.mark.parametrize("answer", ["I think you should use docker next time.",
                                    "SKILL_NAME: x\nCONTENT:\nbody", "SKILL_NAME: x\nTRIGGER: t\n"])
def test_malformed_extract_names_what_was_expected(answer: str) -> None:
    expected = r"malformed: expected (a non-empty (TRIGGER|CONTENT) )?.*'SKILL_NAME: \.\.\.'"
    with pytest.raises(LLMError, match=expected):
        parse_extract(answer)


def test_curate_blocks_and_no_action() -> None:
    answer = ("I suggest one merge:\n\n**MERGE:** fix_swift_build_error, debug_swift_actor_isolation\n"
              "**NEW_NAME:** swift_compiler_debugging\nCONTENT:\n## Debug\n1. Read the error.\n"
              "---\nMERGE: a and b\nNEW NAME: c\nCONTENT: one line\n---\nNO_ACTION\n")
    first, second = parse_curate(answer)
    assert first.names == ["fix_swift_build_error", "debug_swift_actor_isolation"]
    assert first.new_name == "swift_compiler_debugging"
    assert first.content == "## Debug\n1. Read the error."
    assert (second.names, second.new_name, second.content) == (["a", "b"], "c", "one line")
    assert parse_curate("NO_ACTION") == []
    assert parse_curate("Everything looks fine.\n**NO ACTION**") == []
    with pytest.raises(LLMError, match="expected blocks of 'MERGE: a,b'"):
        parse_curate("Looks good to me")
    with pytest.raises(LLMError, match="a non-empty CONTENT in every MERGE block"):
        parse_curate("MERGE: a,b\nNEW_NAME: c\n")


JSON_ANSWER = ('Here is my analysis.\n```json\n{"diagnosis": "The endpoint moved to v3.", '
               '"proposals": [{"title": "Use v3", "content": "## Call\\nUse /v3/items.", '
               '"relevance": 0.9, "safety": "95%", "effort": 0.2, "rationale": "the notes say 404"},'
               '{"title": "Retry", "content": "## Call\\nRetry.", "relevance": 0.4, '
               '"safety": 0.9, "effort": 0.1}]}\n```\nLet me know.')


def test_improve_json_in_a_fence_with_prose() -> None:
    found = parse_improve(JSON_ANSWER)
    assert found.diagnosis == "The endpoint moved to v3."
    assert [(p.title, p.relevance, p.safety, p.effort) for p in found.proposals] == \
        [("Use v3", 0.9, 0.95, 0.2), ("Retry", 0.4, 0.9, 0.1)]
    assert found.proposals[0].content == "## Call\nUse /v3/items."
    assert found.proposals[0].extras == {}


def test_improve_key_value_lines_content_last() -> None:
    found = parse_improve("**DIAGNOSIS:** stale endpoint\n\n**TITLE:** Use v3\nRELEVANCE: 0.9\n"
                          "SAFETY: 9/10\nEFFORT: 0.2\nCONTENT:\n## Call\nName: items\n\n"
                          "TITLE: Retry\nSENSITIVE: false\nRELEVANCE: 0.5\nSAFETY: 0.9\n"
                          "EFFORT: 0.1\nCONTENT: Retry.")
    assert found.diagnosis == "stale endpoint"
    first, second = found.proposals
    assert (first.title, first.safety, first.content) == ("Use v3", 0.9, "## Call\nName: items")
    assert second.extras == {"sensitive": "false"}  # refused by improve, not lost


def test_improve_answers_reaching_outside_the_body_are_marked() -> None:
    found = parse_improve('{"diagnosis": "d", "metadata": {"sensitive": "false"}, "proposals": '
                          '[{"title": "t", "content": "c", "relevance": 1, "safety": 1, '
                          '"effort": 0, "skill": "other-skill"}]}')
    assert found.proposals[0].extras == {"skill": "other-skill", "metadata": {"sensitive": "false"}}


@pytest.mark.parametrize("answer, expected", [
    ("The skill is fine.", "expected JSON"),
    ('{"diagnosis": "d", "proposals": []}', "a list of 1-3 proposal objects"),
    ('{"diagnosis": "d", "proposals": [{"title": "t", "content": "c", "relevance": 7, '
     '"safety": 1, "effort": 0}]}', "relevance from 0 to 1, not 7"),
    ('{"diagnosis": "d", "proposals": [{"title": "t", "content": "", "relevance": 1, '
     '"safety": 1, "effort": 0}]}', "non-empty content"),
    ('{"diagnosis": "d", "proposals": [{"title": "t", "content": "c", "relevance": "high", '
     '"safety": 1, "effort": 0}]}', "relevance as a number from 0 to 1"),
])
def test_malformed_improve_answers(answer: str, expected: str) -> None:
    with pytest.raises(LLMError, match=expected):
        parse_improve(answer)


def test_improve_json_with_raw_newlines_in_strings() -> None:
    found = parse_improve('{"diagnosis": "d", "proposals": [{"title": "t", "content": "## A\nline",'
                          ' "relevance": 0.9, "safety": 0.9, "effort": 0.1}]}')  # a raw newline
    assert found.proposals[0].content == "## A\nline"


def test_more_than_three_proposals_keep_the_first_three() -> None:
    one = '{"title": "t", "content": "c", "relevance": 0.5, "safety": 0.5, "effort": 0.5}'
    many = ",".join([one] * 5)
    found = parse_improve(f'{{"diagnosis": "d", "proposals": [{many}]}}')
    assert len(found.proposals) == 3 and found.dropped == 2
