"""The wheel ships what an installed gitvault reads beside its code: the hook shims,
the templates ``init`` writes and the demo's example skills; and a vault made by the
installed package (not this checkout) gets them."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from gitvault.core import config
from gitvault.skills.model import parse_skill, render_skill
from tests.conftest import REPO, isolated_env


def test_the_wheel_ships_hooks_templates_and_examples(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(out), str(REPO)], check=True, capture_output=True, timeout=300)
    wheel = next(out.glob("gitvault-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("gitvault/_hooks/pre-commit", "gitvault/_hooks/post-merge",
                 "gitvault/_templates/gitvault.yaml", "gitvault/_templates/gitattributes",
                 "gitvault/_templates/SKILL.md", "gitvault/cli/main.py"):
        assert name in names, name
    assert any(n.startswith("gitvault/_examples/skills/") and n.endswith("/SKILL.md") for n in names)
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {**isolated_env(tmp_path), "PYTHONPATH": str(site)}
    run = subprocess.run([sys.executable, "-m", "gitvault", "init", str(tmp_path / "v")],
                         capture_output=True, cwd=tmp_path, env=env, timeout=120)
    assert run.returncode == 0, run.stderr.decode()
    vault = tmp_path / "v"
    assert (vault / "gitvault.yaml").read_text() == (REPO / "templates" / "gitvault.yaml").read_text()
    assert (vault / ".gitattributes").read_text() == (REPO / "templates" / "gitattributes").read_text()
    shim = (vault / ".git" / "hooks" / "pre-commit").read_text()
    assert "gitvault-hook-shim" in shim


def test_the_config_template_is_every_default() -> None:
    text = (REPO / "templates" / "gitvault.yaml").read_text("utf-8")
    assert config.validate(config.parse_yaml(text.encode(), "gitvault.yaml")).as_dict() == \
        config.defaults().as_dict()
    import yaml

    assert yaml.safe_load(text) == config.defaults().as_dict()  # every key spelled out


def test_the_skill_template_is_a_skill_as_gitvault_writes_it() -> None:
    text = (REPO / "templates" / "SKILL.md").read_text("utf-8")
    skill = parse_skill(text, "templates/SKILL.md")
    assert skill.name == "my-skill-name" and skill.kind == "procedure"
    assert render_skill(skill) == text
