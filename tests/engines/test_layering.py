"""Engines depend on nothing above them: no module under engines/ imports the catalogue, the
services, the blueprints, the models, the app or Flask. What an engine reads of a tool reaches
it as ``engines.base.ToolSpec``; the provider settings reach it as plain values, from the source
``create_app`` installs (``engines.models.providers.read_settings_from``)."""

import ast
from pathlib import Path

ENGINES = Path(__file__).resolve().parents[2] / "engines"
ABOVE = {"app", "blueprints", "catalogue", "extensions", "jobs", "models", "services"}
# Modules that still import Flask: none.
FLASK_LEFT = set()


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


def test_no_engine_imports_flask():
    with_flask = {
        str(path.relative_to(ENGINES))
        for path in ENGINES.rglob("*.py")
        if "flask" in imported_packages(path)
    }
    assert with_flask == FLASK_LEFT
