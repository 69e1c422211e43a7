"""The import direction of DESIGN.md: a module imports only from layers below it,
and each third-party library has one owning module."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "gitvault"

# Lowest first. cli, the MCP server, the tool protocol and the demo sit on top.
LAYERS: list[set[str]] = [
    {"errors", "clock", "paths", "config"},
    {"redact", "jsonl", "skills", "gitrepo", "queue_state", "queue_rules", "queue_log", "dag",
     "runlog", "runparse", "runcache", "runrecord"},
    {"versions", "search", "health", "queue", "queue_import", "gate", "watch"},
    {"curator", "hooks", "doctor", "dashboard"},
    {"vault"},
    {"cli", "queue_cli", "protocol", "retrieval", "demo", "importbus", "fast", "mcp_server",
     "__main__", "__init__"},
]
OWNERS = {"click": {"cli"}, "frontmatter": {"skills"}, "git": {"gitrepo"},
          "yaml": {"config", "skills"}, "mcp": {"mcp_server"}, "msgspec": {"runparse"},
          "rich": {"dashboard"}}


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    return rel.parts[0]


def layer_of(name: str) -> int:
    for index, layer in enumerate(LAYERS):
        if name in layer:
            return index
    raise AssertionError(f"gitvault.{name} is in no layer of tests/test_layering.py")


def imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
            if node.module == "gitvault":
                found += [f"gitvault.{alias.name}" for alias in node.names]
    return found


def test_every_module_imports_only_from_lower_layers() -> None:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        me = module_name(path)
        mine = layer_of(me)
        for target in imports(path):
            parts = target.split(".")
            if parts[0] != "gitvault" or len(parts) < 2 or parts[1] == me:
                continue
            if me in LAYERS[-1]:
                if parts[1] == "cli" and me not in ("cli", "__main__", "fast"):
                    bad.append(f"{path.relative_to(PACKAGE)} imports the CLI")
            elif layer_of(parts[1]) > mine or (layer_of(parts[1]) == mine and mine >= 2):
                bad.append(f"{path.relative_to(PACKAGE)} imports {target}")
    assert bad == []


def test_third_party_libraries_have_one_owner() -> None:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        me = module_name(path)
        for target in imports(path):
            top = target.split(".")[0]
            if top in OWNERS and me not in OWNERS[top]:
                bad.append(f"{path.relative_to(PACKAGE)} imports {top}")
    assert bad == []


def test_library_code_never_prints_or_exits() -> None:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if module_name(path) in LAYERS[-1]:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else \
                    f"{getattr(func.value, 'id', '')}.{func.attr}" if isinstance(func, ast.Attribute) else ""
                if name in ("print", "sys.exit", "exit"):
                    bad.append(f"{path.relative_to(PACKAGE)}:{node.lineno} calls {name}")
    assert bad == []


def test_record_store_does_not_import_heavy_modules() -> None:
    """record-run must not pay for git, yaml or frontmatter."""
    for module in ("jsonl", "redact", "clock", "paths", "errors"):
        tops = {t.split(".")[0] for t in imports(PACKAGE / f"{module}.py")}
        assert not tops & {"yaml", "frontmatter", "git", "click", "subprocess"}, module
