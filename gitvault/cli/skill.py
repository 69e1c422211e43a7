"""``gitvault skill ...``: create, patch, show, list, log, diff, rollback, archive,
restore."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from gitvault.cli.common import emit, global_options, read_input, state, unsafe_no_sandbox_option, warn
from gitvault.skills.model import KINDS, PROVENANCES
from gitvault.skills.usage import LIST_STATES

if TYPE_CHECKING:
    from gitvault.skills.model import Skill
    from gitvault.vault.facade import Vault


@click.group()
@global_options
def skill() -> None:
    """Create, change and inspect skills. Every change is a new version (a git commit)."""


def _content_options(func: Any) -> Any:
    func = click.argument("stdin", required=False, metavar="[-]")(func)
    func = click.option("--file", "file", metavar="F",
                        help="Read the markdown body from F ('-' for stdin).")(func)
    func = click.option("--content", metavar="TEXT", help="The markdown body.")(func)
    return func


def _edit_options(func: Any) -> Any:
    func = click.option("--sensitive/--not-sensitive", default=None,
                        help="A sensitive skill is never auto-edited by the improvement loop.")(func)
    func = click.option("--tags", metavar="a,b", help="Comma-separated tags.")(func)
    func = click.option("--trigger", metavar="TEXT",
                        help="When to use the skill (default: the description).")(func)
    return func


def _body(content: str | None, file: str | None, stdin: str | None) -> str | None:
    from gitvault.errors import InvalidInput

    if stdin is not None:
        if stdin != "-":
            raise InvalidInput(f"unexpected argument {stdin!r} (use '-' to read the body from stdin)")
        if file is not None:
            raise InvalidInput("give the body with --content, --file or '-', not several")
        file = "-"
    return read_input(content, file, "body")


def _code_options(func: Any) -> Any:
    func = unsafe_no_sandbox_option("Run the gate's tests even where no OS sandbox can be "
                                    "had (recorded in the gate record and the commit).")(func)
    func = click.option("--example", metavar="F", help="Code skills: an example call.")(func)
    func = click.option("--tests", metavar="F", help="Code skills: assert-based tests.")(func)
    func = click.option("--code", metavar="F", help="Code skills: the function(s).")(func)
    return func


def _code_files(code: str | None, tests: str | None, example: str | None) -> dict[str, Any]:
    """The code files named by --code/--tests/--example, read as text."""
    return {"code": read_input(None, code, "code") if code else None,
            "tests": read_input(None, tests, "tests") if tests else None,
            "example": read_input(None, example, "example") if example else None}


def _changed(vault: Vault, made: Skill, status: str, text: str, source: int | None = None) -> None:
    """Print a skill that a command wrote: ``{"status", ["from",] "skill"}``."""
    stats, _ = vault.skill_stats()
    data: dict[str, Any] = {"status": status}
    if source is not None:
        data["from"] = source
    data["skill"] = vault.skills.view(made, stats)
    emit(data, text)


@skill.command()
@click.argument("name")
@click.option("--description", metavar="TEXT", required=True,
              help="What the skill does and when to use it (1-1024 characters).")
@_content_options
@click.option("--kind", type=click.Choice(KINDS),
              help="procedure (default), code or lesson.")
@click.option("--provenance", type=click.Choice(PROVENANCES),
              help="Who wrote it (default: agent).")
@_edit_options
@_code_options
@global_options
def create(name: str, description: str, content: str | None, file: str | None,
           stdin: str | None, kind: str | None, provenance: str | None, trigger: str | None,
           tags: str | None, sensitive: bool | None, code: str | None, tests: str | None,
           example: str | None, unsafe_no_sandbox: bool) -> None:
    """Create skill NAME. If it exists already, nothing changes (exit 0).

    A code skill (--kind code --code F --tests F --example F) is stored only after
    passing the verification gate; a refused one goes to skills/.rejected/ (exit 1)."""
    from gitvault.skills.store import SkillEdit

    vault = state().vault()
    edit = SkillEdit(content=_body(content, file, stdin) or "", description=description,
                     trigger=trigger, kind=kind, provenance=provenance, tags=tags,
                     sensitive=sensitive, **_code_files(code, tests, example),
                     unsafe_no_sandbox=unsafe_no_sandbox)
    made, created = vault.skills.create(name, edit)
    _changed(vault, made, "created" if created else "exists",
             f"created skill {made.name} v{made.version}" if created
             else f"skill {made.name} exists (v{made.version}); nothing changed")


@skill.command()
@click.argument("name")
@_content_options
@click.option("--description", metavar="TEXT", help="A new description.")
@_edit_options
@_code_options
@global_options
def patch(name: str, content: str | None, file: str | None, stdin: str | None,
          description: str | None, trigger: str | None, tags: str | None,
          sensitive: bool | None, code: str | None, tests: str | None, example: str | None,
          unsafe_no_sandbox: bool) -> None:
    """Make a new version of NAME (state active, un-archived); creates it if missing.
    A code skill's new version passes the verification gate first."""
    from gitvault.skills.store import SkillEdit

    vault = state().vault()
    edit = SkillEdit(content=_body(content, file, stdin), description=description,
                     trigger=trigger, tags=tags, sensitive=sensitive,
                     **_code_files(code, tests, example), unsafe_no_sandbox=unsafe_no_sandbox)
    made, op = vault.skills.patch(name, edit)
    done = "patched" if op == "patch" else "created"
    _changed(vault, made, done, f"{done} skill {made.name} v{made.version}")


@skill.command()
@click.argument("ref", metavar="NAME[@vN]")
@global_options
def show(ref: str) -> None:
    """Show a skill, or version N of it with NAME@vN (read from git history)."""
    from gitvault.skills.versions import parse_ref

    vault = state().vault()
    name, version = parse_ref(ref)
    entries = vault.history(name)
    shown = vault.get_skill(name) if version is None else vault.read_version(name, version)
    stats, warnings = vault.skill_stats()
    unverified = None  # the current files decide, unless an older version is shown
    if version is not None and shown.kind == "code" and shown.state != "archived":
        from gitvault.retrieval.inject import code_at
        from gitvault.skills.codegate import trusted_evidence

        unverified = code_at(vault, name, version)[1] not in trusted_evidence(vault.layout,
                                                                              vault.node)
    view = vault.skills.view(shown, stats, content=True, entries=entries, unverified=unverified)
    if warnings:
        view["warnings"] = warn(warnings)

    def text() -> str:
        s = view["stats"]
        head = [f"{view['name']} v{view['version']} ({view['kind']}, {view['state']}, "
                f"by {view['provenance']})", f"urn: {view['urn']}",
                f"description: {view['description']}", f"trigger: {view['trigger']}",
                f"used {s['usage']}x, {s['success']} succeeded, {s['failure']} failed, "
                f"{s['patches']} patches", ""]
        return "\n".join(head) + view["content"]

    emit(view, text)


@skill.command("list")
@click.option("--state", "state_", default="active", show_default=True,
              type=click.Choice(LIST_STATES), help="Which skills to list.")
@global_options
def list_(state_: str) -> None:
    """List skills with their version, state and derived usage counts."""
    vault = state().vault()
    stats, warnings = vault.skill_stats()
    data = vault.skills.listing(state_, stats, warnings)
    warn(data.get("warnings", []))
    views = data["skills"]

    def text() -> str:
        if not views:
            return f"no {state_ if state_ != 'all' else ''} skills".replace("  ", " ")
        rows = [f"{v['name']:<36} v{v['version']:<4} {v['kind']:<9} {v['state']:<8} "
                f"used {v['stats']['usage']}, ok {v['stats']['success']}, "
                f"failed {v['stats']['failure']}" for v in views]
        return "\n".join(rows)

    emit(data, text)


@skill.command()
@click.argument("name")
@global_options
def log(name: str) -> None:
    """The versions of NAME, newest first, from git history."""
    from gitvault.skills.model import normalize_name

    vault = state().vault()
    canonical = normalize_name(name)
    entries = vault.history(canonical)
    if not entries and vault.skills.find(canonical) is None:
        from gitvault.errors import NotFound

        raise NotFound(f"no skill named {canonical!r}")
    versions = [{**e.to_json(), "urn": vault.skills.urn_for(canonical, e.version, entries)}
                for e in entries]
    emit({"name": canonical, "versions": versions},
         lambda: "\n".join(f"v{v['version']:<4} {v['date']}  {v['op']:<9} {v['commit'][:12]}  "
                           f"{v['node']}" for v in versions) or "no committed versions")


@skill.command()
@click.argument("name")
@click.argument("version_a", metavar="vA")
@click.argument("version_b", metavar="vB")
@global_options
def diff(name: str, version_a: str, version_b: str) -> None:
    """A unified diff of NAME between versions vA and vB."""
    from gitvault.skills.model import normalize_name, render_skill
    from gitvault.skills.versions import diff_text, parse_version

    vault = state().vault()
    canonical = normalize_name(name)
    a, b = parse_version(version_a), parse_version(version_b)
    old, new = vault.read_version(canonical, a), vault.read_version(canonical, b)
    text = diff_text(render_skill(old), render_skill(new), f"{canonical}@v{a}",
                     f"{canonical}@v{b}")
    emit({"name": canonical, "from": a, "to": b, "diff": text}, text or "no difference")


@skill.command()
@click.argument("name")
@click.argument("version", metavar="vN")
@global_options
def rollback(name: str, version: str) -> None:
    """Write version N's content as a new version (history is never rewritten)."""
    from gitvault.skills.versions import parse_version

    vault = state().vault()
    target = parse_version(version)
    made = vault.skills.rollback(name, target)
    _changed(vault, made, "rolled_back",
             f"rolled {made.name} back to the content of v{target} as v{made.version}", target)


@skill.command()
@click.argument("name")
@click.option("--reason", metavar="TEXT", help="Why it is archived (kept in metadata).")
@global_options
def archive(name: str, reason: str | None) -> None:
    """Move NAME to skills/.archive/ (a new version; nothing is deleted)."""
    vault = state().vault()
    made = vault.skills.archive(name, reason)
    _changed(vault, made, "archived", f"archived {made.name} as v{made.version}")


@skill.command()
@click.argument("name")
@global_options
def restore(name: str) -> None:
    """Bring an archived skill back (a new version, state active)."""
    vault = state().vault()
    made = vault.skills.restore(name)
    _changed(vault, made, "restored", f"restored {made.name} as v{made.version}")


@skill.command()
@click.argument("name", required=False)
@click.option("--all", "all_", is_flag=True, help="Verify every code skill.")
@unsafe_no_sandbox_option("Run the tests even where no OS sandbox can be had (recorded).")
@global_options
def verify(name: str | None, all_: bool, unsafe_no_sandbox: bool) -> None:
    """Run the verification gate on code skill NAME (or --all); exit 1 if one fails.
    Each run appends a gate record; a pass is evidence for the pre-commit hook."""
    from gitvault.errors import InvalidInput

    if bool(name) == all_:
        raise InvalidInput("give a skill NAME or --all, not both or neither")
    vault = state().vault()
    from gitvault.skills.codegate import verify_stored

    results = verify_stored(vault.skills, None if all_ else name, unsafe_no_sandbox=unsafe_no_sandbox)
    views = [{"name": s.name, "version": s.version, "passed": r.passed, "sandbox": r.sandbox,
              "sha256": r.sha256, "seconds": round(r.seconds, 3), "reasons": r.messages()}
             for s, r in results]
    failed = [v for v in views if not v["passed"]]

    def text() -> str:
        lines = []
        for v in views:
            lines.append(f"{v['name']} v{v['version']}: {'passed' if v['passed'] else 'REFUSED'} "
                         f"(sandbox {v['sandbox']}, {v['seconds']} s)")
            lines += [f"  {m}" for m in v["reasons"]]
        return "\n".join(lines) or "no code skills"

    emit({"results": views, "passed": not failed}, text)
    if failed:
        click.echo("gitvault: error: the verification gate refused "
                   + ", ".join(v["name"] for v in failed), err=True)
        raise click.exceptions.Exit(1)


def _add_retrieval() -> None:
    """search, context and outcome are also skill subcommands (SPEC §4)."""
    from gitvault.cli import retrieval

    for command in (retrieval.search, retrieval.context, retrieval.outcome):
        skill.add_command(command)


_add_retrieval()
