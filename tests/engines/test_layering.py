"""Engines depend on nothing above them: no module under engines/ imports the catalogue, the
services, the blueprints, the models or the app. What an engine reads of a tool reaches it
as ``engines.base.ToolSpec``."""

import ast
from pathlib import Path

ENGINES = Path(__file__).resolve().parents[2] / "engines"
ABOVE = {"app", "blueprints", "catalogue", "extensions", "jobs", "models", "services"}
# Still reads its settings from Flask's app config: to be handed them as plain values.
FLASK_LEFT = {"providers.py"}


def imported_packages(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def test_no_engine_imports_a_layer_above_it():
    modules = sorted(ENGINES.rglob("*.py"))
    assert len(modules) > 60
    upward = {
        str(path.relative_to(ENGINES)): sorted(imported_packages(path) & ABOVE)
        for path in modules
        if imported_packages(path) & ABOVE
    }
    assert upward == {}


def test_only_the_provider_settings_still_come_from_flask():
    with_flask = {
        str(path.relative_to(ENGINES))
        for path in ENGINES.rglob("*.py")
        if "flask" in imported_packages(path)
    }
    assert with_flask == FLASK_LEFT
