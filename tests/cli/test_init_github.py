"""``gitvault init --github``: the workflow of templates/github/gitvault.yml, installed
once, never over a workflow of the user's, clean under actionlint and ``zizmor
--offline`` (as is the project's own ci.yml), and its steps really run against a vault:
``gitvault ci report``, ``ci issues`` (gh replaced by a recording stub) and ``sync`` to
a bare remote."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.ci.helpers import NOW, GhStub, actions_env, flagged_and_drifting, record
from tests.conftest import REPO, Runner, snapshot

BIN = Path(sys.executable).parent
WORKFLOW = ".github/workflows/gitvault.yml"


def tool(name: str) -> str:
    found = shutil.which(name) or str(BIN / name)
    assert Path(found).exists(), f"{name} is missing: pip install -e '.[dev]'"
    return found


def test_init_github_installs_the_workflow_once(gv: Runner, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    result = gv.ok("--json", "init", "--github", str(root)).json()
    assert WORKFLOW in result["created"]
    text = (root / WORKFLOW).read_text()
    from gitvault import __version__

    template = (REPO / "templates" / "github" / "gitvault.yml").read_text()
    assert text == template.replace('"gitvault==VERSION"', f'"gitvault=={__version__}"')
    assert f'pip install --quiet "gitvault=={__version__}"' in text  # pinned: what wrote it
    assert yaml.safe_load(text)[True]["schedule"] == [{"cron": "23 */6 * * *"}]
    assert gv.git("status", "--porcelain", cwd=root) == ""  # committed with the vault
    before = snapshot(root)
    assert gv.ok("--json", "init", "--github", str(root)).json()["created"] == []
    assert snapshot(root) == before


def test_a_vault_in_a_subfolder_gets_its_folder_and_a_users_workflow_is_kept(
        gv: Runner, tmp_path: Path) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    gv.git("init", "-q", cwd=repo)
    gv.ok("init", "--github", str(repo / "memory"))
    flow = yaml.safe_load((repo / WORKFLOW).read_text())
    assert flow["jobs"]["checks"]["env"]["GITVAULT_DIR"] == "memory"
    (repo / WORKFLOW).write_text("name: mine\n")
    other = tmp_path / "other"
    (other / ".github" / "workflows").mkdir(parents=True)
    (other / WORKFLOW).write_text("name: mine\n")
    gv.git("init", "-q", cwd=other)
    refused = gv("init", "--github", str(other))
    assert refused.code == 3 and "is not gitvault's workflow: left as it is" in refused.err
    assert (other / WORKFLOW).read_text() == "name: mine\n"
    assert not (other / "gitvault.yaml").exists()  # a refused init changed nothing


def lint(root: Path, workflow: str) -> None:
    """actionlint and ``zizmor --offline`` pass on ``workflow`` (relative to ``root``)."""
    lint = subprocess.run([tool("actionlint"), "-no-color", workflow], cwd=root,
                          capture_output=True, text=True, timeout=120)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    audit = subprocess.run([tool("zizmor"), "--offline", "--no-progress", workflow], cwd=root,
                           capture_output=True, text=True, timeout=120)
    assert audit.returncode == 0, audit.stdout + audit.stderr


def pinned_and_expression_free(steps: list[dict]) -> None:
    for step in steps:
        if "uses" in step:
            ref = step["uses"].split("@")[1]
            assert len(ref) == 40 and all(c in "0123456789abcdef" for c in ref), step
        assert "${{" not in step.get("run", "")


def test_the_workflow_passes_actionlint_and_zizmor(gv: Runner, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    gv.ok("init", "--github", str(root))
    lint(root, WORKFLOW)
    flow = yaml.safe_load((root / WORKFLOW).read_text())
    triggers = flow[True] if True in flow else flow["on"]  # YAML 1.1 reads `on` as true
    assert set(triggers) == {"schedule", "workflow_dispatch"}
    assert flow["permissions"] == {}
    assert flow["jobs"]["checks"]["permissions"] == {"contents": "write", "issues": "write"}
    steps = flow["jobs"]["checks"]["steps"]
    pinned_and_expression_free(steps)
    runs = [step["run"] for step in steps if "run" in step]
    assert runs[1:] == ["gitvault ci report", "gitvault ci issues", "gitvault sync"]
    assert next(s for s in steps if s.get("run") == "gitvault ci issues")["env"] == {
        "GH_TOKEN": "${{ github.token }}"}


def test_the_projects_own_ci_passes_the_same_linters() -> None:
    lint(REPO, ".github/workflows/ci.yml")
    flow = yaml.safe_load((REPO / ".github/workflows/ci.yml").read_text())
    assert flow["permissions"] == {"contents": "read"}
    steps = flow["jobs"]["test"]["steps"]
    pinned_and_expression_free(steps)
    template = yaml.safe_load((REPO / "templates/github/gitvault.yml").read_text())
    assert {s["uses"] for s in steps if "uses" in s} == {
        s["uses"] for s in template["jobs"]["checks"]["steps"] if "uses" in s}
    assert steps[0]["with"]["persist-credentials"] is False


# The expressions the workflow may use outside run: (the test gives each its value).
EXPRESSIONS = {"${{ github.token }}": "ghs_stubtoken"}


def run_workflow(root: Path, env: dict[str, str]) -> None:
    """Run the installed workflow's steps as the runner would: each ``run:`` with bash,
    in the environment the workflow and the step set. The ``uses:`` steps are skipped
    and so is the install (this venv's gitvault is on PATH)."""
    job = yaml.safe_load((root / WORKFLOW).read_text())["jobs"]["checks"]
    for step in job["steps"]:
        if "run" not in step or "pip install" in step["run"]:
            continue
        step_env = {k: EXPRESSIONS[v] if "${{" in str(v) else str(v)
                    for k, v in step.get("env", {}).items()}
        proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", step["run"]], cwd=root,
                              env={**env, **{k: str(v) for k, v in job["env"].items()}, **step_env},
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (step["name"], proc.stdout, proc.stderr)


def remote_health(remote: Path, env: dict[str, str]) -> list[dict]:
    shown = subprocess.run(["git", "--git-dir", str(remote), "show",
                            "main:logs/health/2026-11/github-actions.jsonl"],
                           capture_output=True, text=True, env=env, check=True).stdout
    return [json.loads(line) for line in shown.splitlines()]


def test_the_workflow_steps_run_against_a_vault(gv: Runner, tmp_path: Path) -> None:
    """A scheduled run, again, and after the flagged skill recovered: the job summary,
    the health record in the remote's history, one issue per problem skill."""
    remote = tmp_path / "remote.git"
    gv.git("init", "-q", "--bare", str(remote), cwd=tmp_path)
    root = tmp_path / "repo"
    gv.ok("init", "--github", "--remote", str(remote), str(root))
    gv.git("push", "-q", "origin", "HEAD:main", cwd=root)
    gv.git("branch", "-q", "--set-upstream-to=origin/main", cwd=root)
    gv.cwd = root
    flagged_and_drifting(gv)
    gh = GhStub.install(tmp_path)
    env = {**gv.env, **actions_env(tmp_path), **gh.env(gv.env), "GITVAULT_NOW": NOW}
    env["PATH"] = f"{BIN}{os.pathsep}{env['PATH']}"
    summary = Path(env["GITHUB_STEP_SUMMARY"])

    run_workflow(root, env)
    text = summary.read_text()
    assert text.startswith("## gitvault: 2 skills need attention\n")
    assert "- ` deploy ` is **flagged**: average score 0.00 is below the flag threshold" in text
    assert "- ` slipping ` is **drifting**: drifting: 0.80 this week, 1.00 the week" in text
    assert text.endswith("### Issues\n\n- opened #1: ` deploy `\n- opened #2: ` slipping `\n\n")
    assert [(i["title"], i["state"]) for i in gh.issues()] == [
        ("gitvault: deploy is flagged", "open"), ("gitvault: slipping is drifting", "open")]
    (first,) = remote_health(remote, gv.env)
    assert first["op"] == "check" and first["node"] == "github-actions"
    assert first["flagged"] == ["deploy"] and first["drifting"] == ["slipping"]
    assert first["github"]["runUrl"] == "https://github.com/acme/skills/actions/runs/4242"
    assert gv.git("status", "--porcelain") == ""  # everything committed and pushed
    assert gv.git("rev-parse", "HEAD") == subprocess.run(
        ["git", "--git-dir", str(remote), "rev-parse", "main"], capture_output=True, text=True,
        env=gv.env).stdout

    calls = len(gh.calls())
    run_workflow(root, env)  # the next day's run, nothing changed
    assert [c[1] for c in gh.calls()[calls:]] == ["list"]
    assert len(gh.issues()) == 2 and all(i["comments"] == [] for i in gh.issues())
    assert len(remote_health(remote, gv.env)) == 2

    for minute in range(10, 24):
        record(gv, "deploy", "success", "1", f"2026-11-30T10:{minute}:00.000Z")
    run_workflow(root, env)
    assert [i["state"] for i in gh.issues()] == ["closed", "open"]
    assert "` deploy ` is healthy again" in gh.issues()[0]["comments"][-1]
    last = remote_health(remote, gv.env)[-1]
    assert last["flagged"] == [] and last["drifting"] == ["slipping"]
    assert summary.read_text().count("## gitvault: ") == 3
    assert "## gitvault: 1 skill needs attention\n" in summary.read_text()
