"""The documentation: ``docs/`` builds into a site with ``mkdocs build --strict`` (no broken
link, no page left out of the nav), every page has its front matter, and the README stays a
short front door (docs/contributing/docs.md)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from services.assistant import documents

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
AUDIENCES = {"user", "api", "operator", "contributor"}


def _pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def test_the_docs_site_builds_strictly_without_a_warning(tmp_path):
    pytest.importorskip("mkdocs")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    assert (tmp_path / "api" / "webhooks" / "index.html").is_file()


@pytest.mark.parametrize("page", _pages(), ids=lambda page: page.relative_to(DOCS).as_posix())
def test_every_page_has_a_title_and_an_audience(page):
    text = page.read_text(encoding="utf-8")
    assert text.startswith("---\n"), "no front matter"
    meta = yaml.safe_load(text.split("---\n", 2)[1])
    assert isinstance(meta.get("title"), str) and meta["title"].strip()
    assert meta.get("audience") in AUDIENCES


def test_every_page_is_in_the_nav():
    nav = {path for path, _ in documents.nav_pages()}
    pages = {page.relative_to(DOCS).as_posix() for page in _pages()}
    assert pages == nav


def test_the_guide_shows_the_user_and_api_pages_only():
    titles = {section.title for section in documents.guide_sections()}
    for page in _pages():
        meta = documents.read_page(page)
        shown = meta.audience in {"user", "api"} and page != DOCS / "index.md"
        assert (meta.title in titles) == shown, page


def test_the_readme_is_short_and_starts_with_the_two_commands():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 200
    assert lines[2:6] == [
        "```sh",
        "make run     # set up and start on the embedded default (SQLite, no Redis); prints a"
        " demo key",
        "make test    # set up and run the whole test suite (PostgreSQL and Redis when reachable)",
        "```",
    ]


def test_the_guide_links_only_to_its_own_sections_and_the_site():
    sections = documents.guide_sections()
    anchors = {section.anchor for section in sections}
    for section in sections:
        for target in re.findall(r"\]\(([^)\s]+)\)", section.body):
            assert not target.endswith(".md") and ".md#" not in target, (section.title, target)
            if target.startswith("#"):
                assert target[1:] in anchors, (section.title, target)
    by_title = {section.title: section.body for section in sections}
    assert "[Searching the catalogue](#searching-the-catalogue)" in by_title["The catalogue"]
    assert "see the settings." in by_title["Your account"]
