"""Node ids as SPEC §1 orders them (``--node``, ``GITVAULT_NODE``, ``git config
gitvault.node`` as git itself reads it, the host name), through the library."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitvault.core.paths import VaultLayout, host_node, resolve_node
from gitvault.errors import GitError, InvalidInput
from tests.conftest import isolated_env


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No GITVAULT_NODE, and a global git config of our own (``$HOME/.gitconfig``)."""
    for key in [k for k in os.environ if k.startswith(("GITVAULT_", "GIT_"))]:
        monkeypatch.delenv(key)
    for key, value in isolated_env(tmp_path).items():
        if key.startswith(("GIT_", "HOME")):
            monkeypatch.setenv(key, value)
    return tmp_path / "home"


def git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def repo(path: Path) -> VaultLayout:
    git("init", "-q", "-b", "main", str(path))
    return VaultLayout(path)


def test_global_config_is_honoured(home: Path, tmp_path: Path) -> None:
    git("config", "--global", "gitvault.node", "laptop")
    assert resolve_node(None, repo(tmp_path / "r").git_dir) == "laptop"


def test_global_config_is_honoured_outside_a_repository(home: Path) -> None:
    git("config", "--global", "gitvault.node", "laptop")
    assert resolve_node(None, None) == "laptop"


def test_includes_of_the_global_config_are_honoured(home: Path, tmp_path: Path) -> None:
    (home / "node.inc").write_text("[gitvault]\n\tnode = included\n")
    git("config", "--global", "include.path", str(home / "node.inc"))
    assert resolve_node(None, repo(tmp_path / "r").git_dir) == "included"


def test_repository_config_overrides_global(home: Path, tmp_path: Path) -> None:
    git("config", "--global", "gitvault.node", "laptop")
    layout = repo(tmp_path / "r")
    git("config", "gitvault.node", "this-clone", cwd=layout.root)
    assert resolve_node(None, layout.git_dir) == "this-clone"


def test_a_linked_worktree_reads_its_own_config(home: Path, tmp_path: Path) -> None:
    main = repo(tmp_path / "r")
    git("config", "gitvault.node", "main-tree", cwd=main.root)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x",
        cwd=main.root)
    git("worktree", "add", "-q", str(tmp_path / "wt"), cwd=main.root)
    linked = VaultLayout(tmp_path / "wt")
    assert linked.git_dir is not None and linked.git_dir != main.git_dir
    assert resolve_node(None, linked.git_dir) == "main-tree"
    git("config", "extensions.worktreeConfig", "true", cwd=main.root)
    git("config", "--worktree", "gitvault.node", "linked-tree", cwd=linked.root)
    assert resolve_node(None, linked.git_dir) == "linked-tree"
    assert resolve_node(None, main.git_dir) == "main-tree"


def test_a_bare_repository_policy_does_not_hide_the_repository_config(
        home: Path, tmp_path: Path) -> None:
    git("config", "--global", "safe.bareRepository", "explicit")
    layout = repo(tmp_path / "r")
    git("config", "gitvault.node", "this-clone", cwd=layout.root)
    assert resolve_node(None, layout.git_dir) == "this-clone"


def test_git_c_of_a_calling_git_is_honoured(home: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    layout = repo(tmp_path / "r")
    git("config", "gitvault.node", "this-clone", cwd=layout.root)
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'gitvault.node'='from-hook'")
    assert resolve_node(None, layout.git_dir) == "from-hook"


def test_env_and_flag_override_git_config(home: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    git("config", "--global", "gitvault.node", "laptop")
    layout = repo(tmp_path / "r")
    git("config", "gitvault.node", "this-clone", cwd=layout.root)
    monkeypatch.setenv("GITVAULT_NODE", "from-env")
    assert resolve_node(None, layout.git_dir) == "from-env"
    assert resolve_node("from-flag", layout.git_dir) == "from-flag"


def test_env_and_flag_do_not_run_git(home: Path, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    monkeypatch.setenv("GITVAULT_NODE", "from-env")
    assert resolve_node(None, tmp_path) == "from-env"
    monkeypatch.delenv("GITVAULT_NODE")
    assert resolve_node("from-flag", tmp_path) == "from-flag"
    with pytest.raises(GitError, match="git is not installed"):
        resolve_node(None, tmp_path)


def test_no_config_means_the_host_name(home: Path, tmp_path: Path) -> None:
    assert resolve_node(None, repo(tmp_path / "r").git_dir) == host_node()
    assert resolve_node(None, None) == host_node()


def test_an_invalid_node_names_where_it_came_from(home: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    git("config", "--global", "gitvault.node", "Bad Node")
    with pytest.raises(InvalidInput, match=r"^invalid node id 'Bad Node' from git config "
                                           r"gitvault.node: use lowercase letters"):
        resolve_node(None, None)
    monkeypatch.setenv("GITVAULT_NODE", "x--y")
    with pytest.raises(InvalidInput, match=r"^invalid node id 'x--y' from GITVAULT_NODE"):
        resolve_node(None, None)


def test_a_broken_git_config_is_git_s_own_message(home: Path) -> None:
    (home / ".gitconfig").write_text("[gitvault\n")
    with pytest.raises(GitError, match=r"^git config failed: fatal: bad config line 1"):
        resolve_node(None, None)


def test_the_answer_is_cached_until_a_config_file_changes(home: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The hot commands start no git process while no config file git reads changed."""
    layout = repo(tmp_path / "r")
    git("config", "--global", "gitvault.node", "laptop")
    assert resolve_node(None, layout.git_dir) == "laptop"
    path = os.environ["PATH"]
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    assert resolve_node(None, layout.git_dir) == "laptop"  # no git to run: the cache answered
    monkeypatch.setenv("PATH", path)
    git("config", "--global", "gitvault.node", "desk")     # the global file changed
    assert resolve_node(None, layout.git_dir) == "desk"
    git("config", "gitvault.node", "clone", cwd=layout.root)  # the repository's changed
    assert resolve_node(None, layout.git_dir) == "clone"
    git("config", "--unset", "gitvault.node", cwd=layout.root)
    assert resolve_node(None, layout.git_dir) == "desk"


def test_an_include_or_a_calling_git_s_settings_always_ask_git(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    layout = repo(tmp_path / "r")
    (home / "node.inc").write_text("[gitvault]\n\tnode = first\n")
    git("config", "--global", "include.path", str(home / "node.inc"))
    assert resolve_node(None, layout.git_dir) == "first"
    (home / "node.inc").write_text("[gitvault]\n\tnode = second\n")  # only the included file
    assert resolve_node(None, layout.git_dir) == "second"
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'gitvault.node=from-c'")
    assert resolve_node(None, layout.git_dir) == "from-c"
