"""The import direction of DESIGN.md: a package imports only from layers below it (or, in
its own layer, from the packages its ``__init__`` docstring names after "Imports:"), no
module imports itself back through others, and each third-party library has one owning
module."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gitvault"

# Lowest first: cli -> sync -> vault -> hooks -> (capabilities) -> core -> errors.
LAYERS: list[set[str]] = [
    {"errors"},
    {"core"},
    {"skills", "retrieval", "runs", "queue", "gate", "knowledge", "llm"},
    {"hooks"},
    {"vault"},
    {"sync"},
    {"__init__"},
    {"mcp", "ci"},  # DESIGN: cli -> (mcp, ci, sync) -> vault
    {"cli"},
    {"__main__"},
]
OWNERS = {"click": {"gitvault/cli"}, "frontmatter": {"gitvault/skills/model.py"},
          "yaml": {"gitvault/core/config.py", "gitvault/skills/model.py"},
          "msgspec": {"gitvault/runs/parse.py"}, "rich": {"gitvault/runs/dashboard.py"},
          "mcp": {"gitvault/mcp"}, "llm": {"gitvault/llm/providers.py"}}


def modules() -> dict[str, Path]:
    """Every module by dotted name (``gitvault.core.git``), packages by their name."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def package_of(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_of(package: str) -> int:
    for index, layer in enumerate(LAYERS):
        if package in layer:
            return index
    raise AssertionError(f"gitvault.{package} is in no layer of tests/test_layering.py")


def imports(path: Path, *, top_level_only: bool = False) -> list[str]:
    """The gitvault modules (and third-party tops) a file imports; with
    ``top_level_only``, only those imported when the module itself is imported."""
    tree = ast.parse(path.read_text("utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = []
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
            found += [f"{node.module}.{alias.name}" for alias in node.names
                      if f"{node.module}.{alias.name}" in modules()]
    return found


def allowed_siblings(package: str) -> set[str]:
    """Packages of the same layer that ``package`` may import, from its docstring."""
    init = PACKAGE / package / "__init__.py"
    if not init.is_file():
        return set()
    doc = ast.get_docstring(ast.parse(init.read_text("utf-8"))) or ""
    match = re.search(r"Imports:([^.]*)\.", doc)
    return set(re.findall(r"``(\w+)``", match.group(1))) if match else set()


def test_every_package_imports_only_from_lower_layers() -> None:
    bad = []
    for me, path in modules().items():
        mine = package_of(me)
        for target in imports(path):
            if not target.startswith("gitvault.") and target != "gitvault":
                continue
            theirs = package_of(target)
            if theirs == mine or target == "gitvault":
                continue
            if layer_of(theirs) > layer_of(mine):
                bad.append(f"{me} imports {target} (a higher layer)")
            elif layer_of(theirs) == layer_of(mine) and theirs not in allowed_siblings(mine):
                bad.append(f"{me} imports {target} (same layer, not in {mine}'s Imports:)")
    assert bad == []


def test_sibling_packages_form_no_cycle() -> None:
    import graphlib

    graph = {package: allowed_siblings(package) for layer in LAYERS for package in layer}
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError


def test_no_module_imports_itself_back() -> None:
    """No import cycle between modules, counting only imports that run at import time."""
    import graphlib

    graph = {me: {t for t in imports(path, top_level_only=True) if t in modules() and t != me}
             for me, path in modules().items()}
    graphlib.TopologicalSorter(graph).prepare()


def test_third_party_libraries_have_one_owner() -> None:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        for target in imports(path):
            top = target.split(".")[0]
            if top in OWNERS and not any(rel == o or rel.startswith(o + "/") for o in OWNERS[top]):
                bad.append(f"{rel} imports {top}")
    assert bad == []


def test_library_code_never_prints_or_exits() -> None:
    bad = []
    for me, path in modules().items():
        if package_of(me) in ("cli", "__main__"):
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else \
                    f"{getattr(func.value, 'id', '')}.{func.attr}" if isinstance(func, ast.Attribute) else ""
                if name in ("print", "sys.exit", "exit"):
                    bad.append(f"{me}:{node.lineno} calls {name}")
    assert bad == []


@pytest.mark.parametrize("module", ["core/records.py", "core/redact.py", "core/clock.py",
                                    "core/paths.py", "errors.py", "runs/record.py"])
def test_record_store_does_not_import_heavy_modules(module: str) -> None:
    """record-run must not pay for yaml, frontmatter, click or subprocess at import."""
    tops = {t.split(".")[0] for t in imports(PACKAGE / module, top_level_only=True)}
    assert not tops & {"yaml", "frontmatter", "click", "subprocess", "msgspec"}, module


def test_only_the_top_keeps_flat_modules() -> None:
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert flat == ["__init__.py", "__main__.py", "errors.py"]
