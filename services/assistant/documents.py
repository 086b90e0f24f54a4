"""What the site assistant searches: one document per tool, per workflow, per section of
the README's user and API documentation (shown at ``/docs/guide``) and per changelog entry.

Each document has a title, the address of the page that shows it (``/tools/<slug>/``,
``/workflows/<id>/``, ``/docs/guide#<anchor>``, ``/api/changelog/#<id>``), the one line an
answer shows for it, and the text that retrieval reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from catalogue import Catalogue, Tool, Workflow, WorkflowCatalogue
from services import changelog

README = Path(__file__).resolve().parents[2] / "README.md"
GUIDE_PATH = "/docs/guide"
# README sections for people who run the service rather than use it (and everything below
# them): not shown at /docs/guide, not searched.
_OPERATOR_SECTIONS = ("Operating it", "Where the code is", "Benchmarks")
_HEADING = re.compile(r"^(#{2,3}) +(.+?) *#*$")
# [text](relative/path): a link into the repository, which the site does not serve.
_REPO_LINK = re.compile(r"\[([^\]]+)\]\((?!https?:|#|/)[^)]+\)")
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
class Section:
    """A README section: its heading, level (2 or 3), anchor and Markdown body."""

    title: str
    level: int
    anchor: str
    body: str


def anchor_of(heading: str) -> str:
    """GitHub's anchor for a heading: "Queued runs, waiting" → "queued-runs-waiting"."""
    text = re.sub(r"`([^`]*)`", r"\1", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def readme_sections(path: Path = README) -> tuple[Section, ...]:
    """The README's user and API sections (## and ###), operator sections left out."""
    return _sections(str(path))


@lru_cache(maxsize=4)
def _sections(path: str) -> tuple[Section, ...]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        return ()
    sections: list[Section] = []
    seen: dict[str, int] = {}
    title, level, lines, skipping, fenced = None, 0, [], False, False

    def close() -> None:
        if title is not None and not skipping:
            anchor = anchor_of(title)
            count = seen.get(anchor, 0)
            seen[anchor] = count + 1
            if count:
                anchor = f"{anchor}-{count}"
            body = _REPO_LINK.sub(r"\1", "\n".join(lines).strip())
            sections.append(Section(title, level, anchor, body))

    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else _HEADING.match(line)
        if match is None:
            lines.append(line)
            continue
        close()
        title, level, lines = match.group(2).strip(), len(match.group(1)), []
        if level == 2:
            skipping = title in _OPERATOR_SECTIONS
    close()
    return tuple(sections)


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


# Site pages that no README section stands for: (id, title, address, line, text).
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
