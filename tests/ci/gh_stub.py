"""A stand-in for the GitHub CLI in the tests: the one network call of ``ci issues``.

Installed as an executable ``gh`` on PATH. It appends each argv (and whether GH_TOKEN
was set) to ``$GH_STUB_LOG`` and keeps the repository's issues in ``$GH_STUB_STATE``
(JSON), so ``issue list/create/edit/comment/close`` behave as on GitHub. Like gh, it
refuses to work without a token. ``GH_STUB_FAIL=SUBCOMMAND`` makes that subcommand fail
as an API error does; ``GH_STUB_SLEEP=SECONDS`` makes every call hang that long.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def options(args: list[str]) -> tuple[list[str], dict[str, str]]:
    positional, named = [], {}
    i = 0
    while i < len(args):
        if args[i].startswith("--"):
            named[args[i][2:]] = args[i + 1]
            i += 2
        else:
            positional.append(args[i])
            i += 1
    return positional, named


def main() -> int:
    argv = sys.argv[1:]
    with open(os.environ["GH_STUB_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"argv": argv, "token": bool(os.environ.get("GH_TOKEN"))}) + "\n")
    if os.environ.get("GH_STUB_SLEEP"):
        time.sleep(float(os.environ["GH_STUB_SLEEP"]))
    if not os.environ.get("GH_TOKEN"):
        sys.stderr.write("gh: To use GitHub CLI in a GitHub Actions workflow, set the GH_TOKEN "
                         "environment variable.\n")
        return 4
    if argv[:1] != ["issue"] or len(argv) < 2:
        sys.stderr.write(f"unknown command {argv!r}\n")
        return 1
    verb = argv[1]
    if os.environ.get("GH_STUB_FAIL") == verb:
        sys.stderr.write("HTTP 502: Server Error (https://api.github.com/graphql)\n")
        return 1
    path = Path(os.environ["GH_STUB_STATE"])
    state = json.loads(path.read_text()) if path.exists() else {"next": 1, "issues": []}
    positional, named = options(argv[2:])
    by_number = {str(i["number"]): i for i in state["issues"]}
    if verb == "list":
        fields = named["json"].split(",")
        shown = [{f: i[f] for f in fields} for i in state["issues"]
                 if named.get("state", "open") in ("all", i["state"])]
        print(json.dumps(shown[: int(named.get("limit", "30"))]))
        return 0
    if verb == "create":
        issue = {"number": state["next"], "title": named["title"], "body": named["body"],
                 "state": "open", "comments": []}
        state["next"] += 1
        state["issues"].append(issue)
        print(f"https://github.com/{named.get('repo', 'o/r')}/issues/{issue['number']}")
    elif positional and positional[0] in by_number:
        issue = by_number[positional[0]]
        if verb == "edit":
            issue.update(title=named.get("title", issue["title"]),
                         body=named.get("body", issue["body"]))
        elif verb == "comment":
            issue["comments"].append(named["body"])
        elif verb == "close":
            issue["state"] = "closed"
            if "comment" in named:
                issue["comments"].append(named["comment"])
        else:
            sys.stderr.write(f"unknown command {verb!r}\n")
            return 1
    else:
        sys.stderr.write(f"GraphQL: Could not resolve to an issue ({argv!r})\n")
        return 1
    path.write_text(json.dumps(state, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
