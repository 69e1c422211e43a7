"""The one allowed fake (DESIGN.md): a scripted LLM provider command. It is a real
program, run by gitvault as any provider command is (GITVAULT_LLM_CMD): it reads the
prompt on stdin, logs it, and prints the first canned answer whose marker is in the
prompt. ``@sleep N`` and ``@fail`` answers make it hang or fail."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

SCRIPT = r'''
import json, sys, time
from pathlib import Path
here = Path(__file__).parent
prompt = sys.stdin.read()
with open(here / "prompts.log", "a") as log:
    log.write(prompt + "\n\x1e\n")
for marker, answer in json.loads((here / "answers.json").read_text()):
    if marker in prompt:
        if answer.startswith("@sleep "):
            time.sleep(float(answer.split()[1]))
        elif answer == "@fail":
            sys.stderr.write("model overloaded\nerror: 503 from the server\n")
            sys.exit(3)
        else:
            sys.stdout.write(answer)
        sys.exit(0)
sys.stdout.write("NONE\n")
'''

EXTRACT = "procedural rule from this session"
CURATE = "Below are its active skills"
IMPROVE = "flagged by health monitoring"


class Scripted:
    """The provider's folder: its answers and the prompts it was asked."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "provider.py").write_text(SCRIPT)
        self.answer([])

    @property
    def command(self) -> str:
        return f"{shlex.quote(sys.executable)} {shlex.quote(str(self.folder / 'provider.py'))}"

    @property
    def env(self) -> dict[str, str]:
        return {"GITVAULT_LLM_CMD": self.command}

    def answer(self, pairs: list[tuple[str, str]]) -> None:
        (self.folder / "answers.json").write_text(json.dumps(pairs))

    def prompts(self) -> list[str]:
        log = self.folder / "prompts.log"
        if not log.exists():
            return []
        return [p.strip("\n") for p in log.read_text().split("\n\x1e\n") if p.strip()]
