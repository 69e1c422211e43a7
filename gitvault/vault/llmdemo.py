"""The demo's self-improving loop: one ``extract`` and one ``improve`` with the scripted
provider the demo ships (``examples/llm/scripted-provider.py``: canned answers, no
model), saying so and how to point gitvault at a real model."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from typing import Any

from gitvault.core.shipped import shipped
from gitvault.llm.extract import extract
from gitvault.llm.improve import improve
from gitvault.llm.providers import CommandProvider
from gitvault.vault.facade import Vault

SUMMARY = ("The deploy failed: migration 0042 broke on the CI database only. We dumped the CI "
           "schema, applied the migrations one by one, found 0042 assumed a column that CI "
           "never had, and fixed the migration.")


def provider_command() -> str:
    script = shipped("examples") / "llm" / "scripted-provider.py"
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def loop_cycle(vault: Vault, say: Callable[[str], None], step: Callable[[str, str], None]
               ) -> dict[str, Any]:
    """Extract one skill from a session summary, then improve the flagged skills."""
    loop = vault.loop(provider=False)
    loop.provider = CommandProvider(provider_command(), cwd=vault.root)
    say("\n(The LLM steps below use a scripted provider the demo ships, not a model: "
        f"{provider_command()}. Point gitvault at a real one with GITVAULT_LLM_CMD=\"llm -m "
        "gpt-4o-mini\" or 'git config gitvault.llm-command \"ollama run llama3\"'.)")
    step("An LLM turns a session summary into a skill (provenance curator)",
         "gitvault extract --summary session.md")
    extracted = extract(loop, SUMMARY)
    say(f"  -> {extracted['status']}: {extracted.get('skill')} v{extracted.get('version')} "
        f"(trigger: {extracted.get('trigger')})")
    step("The loop repairs flagged skills: applied under the gate, else a proposal branch",
         "gitvault improve")
    result = improve(loop)
    for d in result["decisions"]:
        title = (d.get("proposal") or {}).get("title", "")
        say(f"  {d['skill']}: {d['diagnosis']}")
        if d["action"] == "applied":
            say(f"    -> applied {title!r} as v{d['version']} (undo: gitvault skill rollback "
                f"{d['skill']} v{d['fromVersion']})")
        elif d["action"] == "proposed":
            say(f"    -> proposed {title!r} on branch {d['branch']} ({'; '.join(d['reasons'])})")
        else:
            say(f"    -> {d['action']}")
    say("  every decision is an improvements record: gitvault improvements")
    vault.commit_logs("gitvault: demo improvement records")
    return {"extracted": extracted.get("skill"),
            "decisions": {d["skill"]: d["action"] for d in result["decisions"]}}
