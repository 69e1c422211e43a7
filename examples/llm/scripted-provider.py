"""A scripted LLM provider for `gitvault demo`: it reads the prompt on stdin and prints
a canned answer, chosen by what the prompt asks, in the shapes real models produce
(prose around the answer, code fences, markdown emphasis). It is no model: point
gitvault at a real one with GITVAULT_LLM_CMD or `git config gitvault.llm-command`
(`llm -m gpt-4o-mini`, `ollama run llama3`, any command reading stdin)."""

import json
import sys

prompt = sys.stdin.read()

if "procedural rule from this session" in prompt:
    sys.stdout.write(
        "Yes, there is one reusable rule in this session.\n\n"
        "**Skill name:** Bisect Failing Migration\n"
        "**Trigger:** When a database migration fails only on the CI database\n"
        "**Content:**\n```markdown\n"
        "## Find the failing step\n"
        "1. Dump the CI schema and diff it against a fresh local migrate.\n"
        "2. Apply the migrations one by one until the failing one shows.\n"
        "3. Fix that migration; never edit one that already ran in production.\n"
        "```\n")
elif "Below are its active skills" in prompt:
    sys.stdout.write("NO_ACTION\n")
elif "'postgres-slow-query'" in prompt:
    answer = {
        "diagnosis": "Runs fail since the planner statistics went stale; the skill never "
                     "says to refresh them before reading the plan.",
        "proposals": [{
            "title": "Refresh statistics before reading the plan",
            "content": "## Diagnose a slow query\n1. Run ANALYZE on the tables involved.\n"
                       "2. Run EXPLAIN (ANALYZE, BUFFERS) on the query.\n"
                       "3. Look for sequential scans on large tables and add an index.\n",
            "relevance": 0.9, "safety": 0.95, "effort": 0.2}]}
    sys.stdout.write("Here is my analysis.\n```json\n" + json.dumps(answer, indent=2) + "\n```\n")
else:
    answer = {
        "diagnosis": "The latest runs fail on new Swift 6 diagnostics the skill does not cover.",
        "proposals": [{
            "title": "Cover Swift 6 strict concurrency",
            "content": "## How to debug\n1. Turn on strict concurrency checking.\n"
                       "2. Mark values crossing actors Sendable or isolate them.\n",
            "relevance": 0.8, "safety": 0.6, "effort": 0.5}]}
    sys.stdout.write(json.dumps(answer))
