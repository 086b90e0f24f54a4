"""What the site assistant searches: one document per tool, per workflow, per page of the
user and API documentation in ``docs/`` (shown together at ``/docs/guide``) and per changelog
entry.

Each document has a title, the address of the page that shows it (``/tools/<slug>/``,
``/workflows/<id>/``, ``/docs/guide#<anchor>``, ``/api/changelog/#<id>``), the one line an
answer shows for it, and the text that retrieval reads.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from catalogue import Catalogue, Tool, Workflow, WorkflowCatalogue
from services import changelog

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
# The docs site's configuration: its nav is the guide's order (docs/contributing/docs.md).
MKDOCS = ROOT / "mkdocs.yml"
GUIDE_PATH = "/docs/guide"
# The pages shown at /docs/guide and searched, by their front matter's audience: operator
# and contributor pages are neither. The docs site's home page is not a section either.
GUIDE_AUDIENCES = ("user", "api")
_HOME = "index.md"
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)
_TITLE = re.compile(r"\A\s*# +(.+?) *#*\n")
# [text](target): a link to another docs page, into the repository or outside.
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
# How much of a section's or an entry's text retrieval reads.
_MAX_TEXT = 4000


@dataclass(frozen=True)
class Document:
    id: str  # "tool:<slug>", "workflow:<id>", "docs:<anchor>", "changelog:<id>"
    kind: str  # tool, workflow, docs, changelog
    title: str
    url: str
    line: str  # what an answer shows beside the link
    text: str  # what retrieval reads
    # Lower-case names a question may give exactly (a slug, a tool's name).
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Page:
    """A page of ``docs/``: its path there, front matter and Markdown body (without its
    front matter and its title's heading)."""

    path: str
    title: str
    audience: str
    body: str


@dataclass(frozen=True)
class Section:
    """A section of the guide: a docs page's title, level (2 or 3), anchor and Markdown body,
    its links to other guide pages turned into links to their anchors."""

    title: str
    level: int
    anchor: str
    body: str


def anchor_of(heading: str) -> str:
    """GitHub's anchor for a heading: "Queued runs, waiting" → "queued-runs-waiting"."""
    text = re.sub(r"`([^`]*)`", r"\1", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def read_page(path: Path, docs: Path = DOCS) -> Page:
    """A docs page; its title from the front matter, else from its first heading."""
    text = path.read_text(encoding="utf-8")
    meta: dict = {}
    match = _FRONT_MATTER.match(text)
    if match:
        meta = yaml.safe_load(match.group(1)) or {}
        text = text[match.end() :]
    heading = _TITLE.match(text)
    if heading:
        text = text[heading.end() :]
    title = str(meta.get("title") or (heading.group(1) if heading else path.stem))
    return Page(
        path=path.relative_to(docs).as_posix(),
        title=title,
        audience=str(meta.get("audience", "")),
        body=text.strip(),
    )


class _ConfigLoader(yaml.SafeLoader):
    """YAML as MkDocs reads it, its own tags (``!ENV``, ``!relative``...) read as nothing."""


_ConfigLoader.add_multi_constructor("!", lambda loader, suffix, node: None)
_ConfigLoader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def nav_pages(config: Path = MKDOCS) -> list[tuple[str, int]]:
    """The pages of the docs site's nav in its order, each with its level in the guide: a
    page alone at the top, or first in a section, is a section (2); the others of a
    section are its subsections (3)."""
    try:
        nav = yaml.load(config.read_text(encoding="utf-8"), _ConfigLoader).get("nav") or []
    except (OSError, AttributeError, yaml.YAMLError):
        return []

    def flat(items) -> list[str]:
        paths: list[str] = []
        for item in items if isinstance(items, list) else [items]:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            paths += flat(value) if isinstance(value, list) else [value]
        return paths

    pages: list[tuple[str, int]] = []
    for item in nav:
        for n, path in enumerate(flat(item)):
            pages.append((path, 2 if n == 0 else 3))
    return pages


def guide_sections(docs: Path = DOCS, config: Path = MKDOCS) -> tuple[Section, ...]:
    """The user and API pages of ``docs/``, in the nav's order, as the guide's sections."""
    return _sections(str(docs), str(config))


@lru_cache(maxsize=4)
def _sections(docs_dir: str, config: str) -> tuple[Section, ...]:
    docs = Path(docs_dir)
    pages: list[tuple[Page, int]] = []
    for path, level in nav_pages(Path(config)):
        try:
            page = read_page(docs / path, docs)
        except (OSError, yaml.YAMLError):
            continue
        if path != _HOME and page.audience in GUIDE_AUDIENCES:
            pages.append((page, level))
    anchors: dict[str, str] = {}
    seen: dict[str, int] = {}
    for page, _ in pages:
        anchor = anchor_of(page.title)
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        anchors[page.path] = f"{anchor}-{count}" if count else anchor
    return tuple(
        Section(page.title, level, anchors[page.path], _guide_links(page, anchors))
        for page, level in pages
    )


def _guide_links(page: Page, anchors: dict[str, str]) -> str:
    """The page's body with each link to a guide page made a link to its anchor, and each
    other relative link (a page the site does not show, a file of the repository) its
    words alone."""

    def replace(match: re.Match) -> str:
        text, target = match.groups()
        if re.match(r"[a-z][a-z0-9+.-]*:|#|/", target):
            return match.group(0)
        path = posixpath.normpath(
            posixpath.join(posixpath.dirname(page.path), target.split("#", 1)[0])
        )
        anchor = anchors.get(path)
        return f"[{text}](#{anchor})" if anchor else text

    return _LINK.sub(replace, page.body)


def tool_document(tool: Tool, category_label: str) -> Document:
    # The name counts twice. The input fields' names and descriptions are left out: with
    # them, the golden set's right tool came first for 71 % of the questions, without
    # them for 80 % (their words, "text", "format", "language", match everything).
    text = "\n".join(
        [tool.name, tool.name, tool.slug.replace("-", " "), tool.summary, category_label]
    )
    return Document(
        id=f"tool:{tool.slug}",
        kind="tool",
        title=tool.name,
        url=f"/tools/{tool.slug}/",
        line=_first_sentence(tool.summary),
        text=text,
        keys=(tool.slug, tool.name.lower()),
    )


def workflow_document(workflow: Workflow) -> Document:
    steps = ", ".join(step.tool.replace("-", " ") for step in workflow.steps)
    return Document(
        id=f"workflow:{workflow.id}",
        kind="workflow",
        title=f"{workflow.name} (workflow)",
        url=f"/workflows/{workflow.id}/",
        line=_first_sentence(workflow.summary),
        text=f"{workflow.name}\nworkflow {workflow.id.replace('-', ' ')}\n{workflow.summary}\n"
        f"Steps: {steps}",
        keys=(workflow.id, workflow.name.lower()),
    )


def section_document(section: Section) -> Document:
    plain = re.sub(r"[*_>|]", " ", section.body.replace("`", ""))
    return Document(
        id=f"docs:{section.anchor}",
        kind="docs",
        title=f"Docs: {section.title}",
        url=f"{GUIDE_PATH}#{section.anchor}",
        line=_first_sentence(re.sub(r"\s+", " ", plain).strip()),
        text=f"{section.title}\n{section.title}\n{plain[:_MAX_TEXT]}",
    )


def changelog_document(entry: changelog.Entry) -> Document:
    endpoints = " ".join(entry.endpoints)
    return Document(
        id=f"changelog:{entry.id}",
        kind="changelog",
        title=f"Changelog: {entry.title}",
        url=entry.url_path,
        line=f"{entry.date.isoformat()}, {entry.kind}",
        text=f"{entry.title}\n{endpoints}\n{entry.body[:_MAX_TEXT]}",
    )


# Site pages that no docs page stands for: (id, title, address, line, text).
_PAGES = (
    (
        "pricing",
        "Pricing: plans and prices",
        "/pricing",
        "The plans, their monthly prices and what each includes.",
        "The plans Free, Starter, Pro, Creator, Business and Agency: what each plan costs a "
        "month and includes (API access, calls a day per key, seats, runs a day on the site); "
        "upgrade your plan.",
    ),
    (
        "api-reference",
        "API reference",
        "/docs",
        "Every operation of the API with its parameters, bodies, answers and schemas.",
        "The API reference: every endpoint with its parameters, request body, responses and "
        "JSON schemas, from the OpenAPI document; try the calls in the browser.",
    ),
)


def page_documents() -> list[Document]:
    return [
        Document(id=f"docs:{key}", kind="docs", title=title, url=url, line=line, text=text)
        for key, title, url, line, text in _PAGES
    ]


def build_documents(
    tools: Catalogue,
    workflows: WorkflowCatalogue,
    entries: tuple[changelog.Entry, ...],
    sections: tuple[Section, ...],
    label=lambda category: category,
) -> list[Document]:
    """Every document, tools first (slug order), then workflows, docs and changelog."""
    documents = [tool_document(tool, label(tool.category)) for tool in tools]
    documents += [workflow_document(workflow) for workflow in workflows]
    documents += [section_document(section) for section in sections if section.body]
    documents += page_documents()
    documents += [changelog_document(entry) for entry in entries]
    return documents


def _first_sentence(text: str, limit: int = 160) -> str:
    text = text.strip()
    match = re.search(r"(?<=[.!?])\s", text)
    sentence = text[: match.start()] if match else text
    if len(sentence) > limit:
        sentence = sentence[: limit - 1].rsplit(" ", 1)[0] + "…"
    return sentence
