"""The layers hold for the whole tree (docs/architecture/index.md): wsgi/app > blueprints > jobs >
services > catalogue > engines > models/extensions/config. A module imports from its own
layer and those below; no cycle between the modules of a package; no module imports
another's private names across packages.

import-linter checks the packages (its contracts are in pyproject.toml); it takes packages
only as roots, so the top-level modules are checked here: app.py, wsgi.py and web_worker.py
are imported by nothing of the product, and extensions.py and config.py import none of it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("blueprints", "jobs", "services", "catalogue", "engines", "models")
TOP = ("app", "wsgi", "web_worker")
BOTTOM = ("extensions", "config", "speedups")
PRODUCT = (*TOP, *PACKAGES, *BOTTOM)


def _modules() -> list[Path]:
    found = [ROOT / f"{name}.py" for name in (*TOP, *BOTTOM)]
    for package in PACKAGES:
        found += sorted((ROOT / package).rglob("*.py"))
    return found


def _imports(path: Path) -> list[ast.ImportFrom | ast.Import]:
    return [
        node
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Import | ast.ImportFrom)
    ]


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_packages_keep_the_import_linter_contracts():
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint), "--no-cache", "--no-logo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_the_top_level_modules_keep_their_layers():
    upward = []
    for path in _modules():
        importer = _module_name(path)
        for node in _imports(path):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            for name in names:
                top = name.split(".")[0]
                if top in TOP and importer not in TOP:
                    upward.append(f"{importer} imports {name}")
                if importer in BOTTOM and top in PRODUCT and top not in BOTTOM:
                    upward.append(f"{importer} imports {name}")
    assert upward == []


def _owner(module: str, name: str) -> str:
    """The package a private ``name`` imported from ``module`` belongs to: the package of
    the module defining it, or ``module`` itself when ``name`` is a module of it."""
    if (ROOT / module.replace(".", "/") / f"{name}.py").exists() or (
        ROOT / module.replace(".", "/") / name
    ).is_dir():
        return module
    return module.rpartition(".")[0] if not (ROOT / module.replace(".", "/")).is_dir() else module


def test_no_module_imports_private_names_across_packages():
    crossing = []
    for path in _modules():
        importer = _module_name(path)
        for node in _imports(path):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            if node.module.split(".")[0] not in PRODUCT:
                continue
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                owner = _owner(node.module, alias.name)
                if private and not (importer == owner or importer.startswith(owner + ".")):
                    crossing.append(f"{importer}: from {node.module} import {alias.name}")
    assert crossing == []
