"""Every Markdown file the repository names exists, and so does every section it names there:
the design the code cites lives in docs/architecture/ (docs/architecture/index.md), and a
comment that sends the reader to a page the repository lacks fails here.

Scanned: the source, templates, static files, settings and docs (not .venv, node_modules,
hidden folders, vendored files, migrations/versions). A path to a Markdown file under ``docs/`` or
``bench/``, or ``README.md`` and ``SECURITY.md``, is checked wherever it is written; any
other ``*.md`` token is checked in Python comments and docstrings and anywhere in the other
files (in Python code, strings name files the tests make). A path is looked up from the
repository's root, from the file's own folder (Markdown links) and from ``docs/`` (the nav
of mkdocs.yml); ``#anchor`` must be a heading of the page, as mkdocs makes anchors.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The team's design notes live outside the repository; nothing here may send readers there.
OUTSIDE_NOTES = "DESIGN" + ".md"
SUFFIXES = {".py", ".html", ".js", ".css", ".toml", ".yaml", ".yml", ".md", ".txt", ".cfg"}
NAMES = {"Makefile", "Procfile"}
# Folders skipped wherever they are (and every hidden one), and folders of the repository's
# root skipped: the built docs site, local data, vendored files, generated migrations.
SKIPPED = {".venv", "node_modules", "__pycache__"}
SKIPPED_PATHS = {("site",), ("instance",), ("migrations", "versions"), ("static", "vendor")}

# A path-like token ending in .md, with an optional #anchor; never a part of a longer path
# or of a URL (the character before it may not be a word character, dot, slash or hyphen).
_REFERENCE = re.compile(r"(?<![\w./-])((?:\.\.?/)*\w[\w./-]*\.md)(?:#([\w-]+))?(?![\w/-])")
# The references checked even in Python code: the repository's own documents by path.
_ALWAYS = re.compile(r"^(?:\.\./)*(?:docs|bench)/|(?:^|/)(?:README|SECURITY)\.md$")
_FENCE = re.compile(r"^\s*(```|~~~)")
# A Markdown link written as code shows the syntax (docs/contributing/docs.md): no link.
_LINK_AS_CODE = re.compile(r"`[^`\n]*\]\([^`\n]*`")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def scanned_files(root: Path = ROOT) -> list[Path]:
    """The repository's own text files, skipping what it does not write itself."""
    found = []
    for folder, subfolders, files in os.walk(root):
        here = Path(folder)
        parts = here.relative_to(root).parts
        subfolders[:] = sorted(
            name
            for name in subfolders
            if name not in SKIPPED
            and not name.startswith(".")
            and (*parts, name) not in SKIPPED_PATHS
        )
        found += [
            here / name for name in sorted(files) if Path(name).suffix in SUFFIXES or name in NAMES
        ]
    return sorted(found)


def _python_prose(text: str) -> str:
    """A Python module's comments and docstrings, one per line."""
    pieces = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                pieces.append(token.string)
        tree = ast.parse(text)
    except (SyntaxError, tokenize.TokenError):
        return text  # read it all rather than nothing
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                pieces.append(docstring)
    return "\n".join(pieces)


def references(path: Path) -> list[tuple[str, str | None]]:
    """The Markdown files (and anchors) ``path`` names, as written."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if ".md" not in text:
        return []  # most files: no need to read their comments apart
    found = [(m[1], m[2]) for m in _REFERENCE.finditer(text) if _ALWAYS.search(m[1])]
    if path.suffix == ".md":
        text = _LINK_AS_CODE.sub("", text)
    prose = _python_prose(text) if path.suffix == ".py" else text
    found += [(m[1], m[2]) for m in _REFERENCE.finditer(prose) if not _ALWAYS.search(m[1])]
    return found


def _target(reference: str, source: Path, root: Path) -> Path | None:
    for base in (root, source.parent, root / "docs"):
        candidate = (base / reference).resolve()
        if candidate.is_file() and candidate.is_relative_to(root):
            return candidate
    return None


def slug(heading: str) -> str:
    """The anchor mkdocs (Python-Markdown's toc) gives a heading."""
    text = re.sub(r"`|\[|\]\([^)]*\)", "", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page's headings (outside fenced code)."""
    found, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (heading := _HEADING.match(line)):
            found.add(slug(heading[2]))
    return found


def broken_references(paths: list[Path], root: Path = ROOT) -> list[str]:
    """Every reference of ``paths`` to a Markdown file (or a section) that does not exist."""
    broken = []
    for path in paths:
        where = path.relative_to(root).as_posix()
        for reference, anchor in references(path):
            target = _target(reference, path, root)
            if target is None:
                broken.append(f"{where}: {reference} does not exist")
            elif anchor and anchor not in anchors(target):
                broken.append(f"{where}: {reference} has no section #{anchor}")
    return broken


def mentions_of_outside_notes(paths: list[Path], root: Path = ROOT) -> list[str]:
    return [
        f"{path.relative_to(root).as_posix()}:{number}"
        for path in paths
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if OUTSIDE_NOTES in line
    ]


def test_every_markdown_file_the_repository_names_exists():
    assert broken_references(scanned_files()) == []


def test_nothing_sends_readers_to_design_notes_outside_the_repository():
    assert mentions_of_outside_notes(scanned_files()) == []


def test_the_design_pages_the_code_cites_are_found_and_checked():
    cited = {reference for path in scanned_files() for reference, _ in references(path)}
    assert "docs/architecture/runs.md" in cited
    assert "docs/architecture/request-pipeline.md" in cited


def test_a_missing_page_a_missing_section_and_the_outside_notes_are_reported(tmp_path):
    # Built so that this file's own code names none of them (its strings are not checked,
    # but a path under bench/ or docs/ would be).
    bench = "bench"
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "page.md").write_text("# A page\n\n## Its `part`\n")
    (tmp_path / "notes" / "other.md").write_text(
        "[A page](page.md), [gone](missing.md), written as code: `[a link](example.md)`\n"
    )
    (tmp_path / "svc.py").write_text(
        '"""See notes/page.md#its-part and notes/gone.md."""\n\n'
        "# As notes/page.md#no-such-part says.\n"
        f'NAME = "fixture.md"  # in code, not checked; {OUTSIDE_NOTES} is\n'
        f'PAGE = "{bench}/gone.md"  # a path under bench/ is checked in code too\n'
    )
    paths = scanned_files(tmp_path)
    assert broken_references(paths, tmp_path) == [
        "notes/other.md: missing.md does not exist",
        f"svc.py: {bench}/gone.md does not exist",
        "svc.py: notes/page.md has no section #no-such-part",
        f"svc.py: {OUTSIDE_NOTES} does not exist",
        "svc.py: notes/gone.md does not exist",
    ]
    assert mentions_of_outside_notes(paths, tmp_path) == ["svc.py:4"]
