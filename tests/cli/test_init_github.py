"""``gitvault init --github``: the workflow of templates/github/gitvault.yml, installed
once, never over a workflow of the user's, clean under actionlint and ``zizmor
--offline``, and its steps really run against a vault (with a bare remote to push to)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

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
    assert text == (REPO / "templates" / "github" / "gitvault.yml").read_text()
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


def test_the_workflow_passes_actionlint_and_zizmor(gv: Runner, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    gv.ok("init", "--github", str(root))
    lint = subprocess.run([tool("actionlint"), "-no-color", WORKFLOW], cwd=root,
                          capture_output=True, text=True, timeout=120)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    audit = subprocess.run([tool("zizmor"), "--offline", "--no-progress", WORKFLOW], cwd=root,
                           capture_output=True, text=True, timeout=120)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    flow = yaml.safe_load((root / WORKFLOW).read_text())
    triggers = flow[True] if True in flow else flow["on"]  # YAML 1.1 reads `on` as true
    assert set(triggers) == {"schedule", "workflow_dispatch"}
    assert flow["permissions"] == {}
    assert flow["jobs"]["checks"]["permissions"] == {"contents": "write"}
    for step in flow["jobs"]["checks"]["steps"]:
        if "uses" in step:
            ref = step["uses"].split("@")[1]
            assert len(ref) == 40 and all(c in "0123456789abcdef" for c in ref), step
        assert "${{" not in step.get("run", "")


def test_the_workflow_steps_run_against_a_vault(gv: Runner, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    gv.git("init", "-q", "--bare", str(remote), cwd=tmp_path)
    root = tmp_path / "repo"
    gv.ok("init", "--github", "--remote", str(remote), str(root))
    gv.git("push", "-q", "origin", "HEAD:main", cwd=root)
    gv.git("branch", "-q", "--set-upstream-to=origin/main", cwd=root)
    gv.ok("skill", "create", "deploy", "--description", "Deploy the app", cwd=root)
    for score in ("0.2", "0.1", "0.0"):
        gv.ok("record-run", "--skill", "deploy", "--result", "fail", "--score", score, cwd=root)
    flow = yaml.safe_load((root / WORKFLOW).read_text())
    job = flow["jobs"]["checks"]
    summary = tmp_path / "summary.md"
    env = {**gv.env, **{k: str(v) for k, v in job["env"].items()},
           "GITHUB_STEP_SUMMARY": str(summary), "RUNNER_TEMP": str(tmp_path),
           "PATH": f"{BIN}{os.pathsep}{gv.env.get('PATH', '')}", "CI": "true"}
    for step in job["steps"]:
        if "run" not in step or "pip install" in step["run"]:
            continue
        proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", step["run"]], cwd=root,
                              env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (step["name"], proc.stdout, proc.stderr)
    assert "## gitvault" in summary.read_text() and "deploy" in summary.read_text()
    assert '"deploy"' in (tmp_path / "health.json").read_text()
    pushed = subprocess.run(["git", "log", "-1", "--format=%s", "main"], cwd=remote,
                            capture_output=True, text=True, env=gv.env).stdout
    assert pushed.strip() == "gitvault: scheduled checks"
