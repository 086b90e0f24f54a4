"""The catalogue's pages: ``/tools/`` (search and filters, htmx answered with the results
alone), ``/workflows/``, ``/workflows/<id>/``, and ``robots.txt`` and ``sitemap.xml``.

A tool's own page (``/tools/<slug>/``) lives in blueprints/site/tools.py; these pages only
link to it.

``/tools/`` lists every tool (about 460) on each unfiltered request, so nothing about a tool
is worked out per request (``_Cards``): each card is rendered once per catalogue (and
availability), the cards of each category and plan filter are joined once, which engines
cannot run here is asked every few seconds, and a search (``Catalogue.search``) reads words
prepared once and keeps its last results. It filters (every word of the query in a tool's
name, summary or slug) rather than ranking by meaning as the site assistant and
``GET /v1/tools?q=`` do: a list narrowed as people type should hold what they typed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from flask import Response, abort, current_app, get_template_attribute, render_template, request
from markupsafe import Markup, escape

import engines
from blueprints.site.routes import bp, category_label
from catalogue import CATEGORIES, TOOL_PLANS, Catalogue, Tool, Workflow, WorkflowCatalogue
from catalogue.tool import MAX_QUERY_CHARS
from services.urls import base_url

# How long /tools/ trusts its answer to which engines cannot run here (_Cards.missing).
AVAILABILITY_SECONDS = 10.0
# The request headers a /tools/ answer depends on (htmx asks for the results alone, except
# when it restores a page from history, which needs the whole page).
_VARY = ("HX-Request", "HX-History-Restore-Request", "HX-Boosted")


def tools_catalogue() -> Catalogue:
    return current_app.extensions["catalogue"]


def workflows_catalogue() -> WorkflowCatalogue:
    return current_app.extensions["workflows"]


# --- /tools/ ---------------------------------------------------------------------------


class _Cards:
    """Each tool's card (HTML), rendered once per catalogue and availability, and the
    engines unavailable here, asked at most every ``AVAILABILITY_SECONDS``."""

    def __init__(self, catalogue: Catalogue):
        self.catalogue = catalogue
        self._render = get_template_attribute("site/_tool_card.html", "tool_card")
        self._cards: dict[tuple[str, str | None], str] = {}
        self._engines = sorted({tool.engine for tool in catalogue.tools.values()})
        self._missing: dict[str, str] = {}
        self._missing_at = float("-inf")
        self._groups: dict[tuple, tuple[dict, list]] = {}

    def missing(self) -> dict[str, str]:
        """The engines that cannot run here and what they lack: "provider" (no model
        provider is set) or "software" (a package is not installed); or "embedded" for
        those that run on the embedded text model alone, which a provider would improve.
        Settings and packages rarely change while the app runs, and asking every engine
        costs about 0.3 ms (some look for files), so the answer is kept for a few seconds."""
        now = time.monotonic()
        if now - self._missing_at >= AVAILABILITY_SECONDS:
            missing = {}
            for name in self._engines:
                engine = engines.get_engine(name)
                reason = engine.unavailable_reason()
                if reason:
                    missing[name] = "provider" if "provider" in reason else "software"
                elif engine.best_with_provider():
                    missing[name] = "embedded"
            self._missing, self._missing_at = missing, now
        return self._missing

    def join(self, tools: Iterable[Tool], missing: dict[str, str]) -> Markup:
        """The cards of ``tools``, one a line (plain string joins: Markup's would escape
        each of about 460 cards again)."""
        cards, render = self._cards, self._render
        html = []
        for tool in tools:
            key = (tool.slug, missing.get(tool.engine))
            card = cards.get(key)
            if card is None:
                card = cards[key] = str(render(tool, key[1])).strip()
            html.append(card)
        return Markup("\n".join(html))

    def groups(
        self, tools: list[Tool], category: str | None, plan: str | None
    ) -> list[tuple[str, int, Markup]]:
        """``tools`` (the catalogue filtered by ``category`` and ``plan``) by category:
        (category, count, cards), kept per filter until availability is asked again."""
        missing = self.missing()
        kept = self._groups.get((category, plan))
        if kept is not None and kept[0] is missing:
            return kept[1]
        by_category: dict[str, list[Tool]] = {}
        for tool in tools:
            by_category.setdefault(tool.category, []).append(tool)
        groups = [
            (name, len(by_category[name]), self.join(by_category[name], missing))
            for name in self.catalogue.categories()
            if name in by_category
        ]
        self._groups[(category, plan)] = (missing, groups)
        return groups


def _cards() -> _Cards:
    catalogue = tools_catalogue()
    cards = current_app.extensions.get("site.tool_cards")
    if cards is None or cards.catalogue is not catalogue:
        cards = current_app.extensions["site.tool_cards"] = _Cards(catalogue)
    return cards


@dataclass
class ToolQuery:
    """What /tools/ was asked: the text and the filters, as the form shows them."""

    q: str = ""
    category: str = ""
    plan: str = ""
    error: str | None = None

    @property
    def filtered(self) -> bool:
        return bool(self.q or self.category or self.plan)

    def describe(self) -> str:
        """The filters in words, for the count: ' matching “x” in SEO on the Pro plan'."""
        parts = []
        if self.q:
            parts.append(f"matching “{self.q}”")
        if self.category:
            parts.append(f"in {category_label(self.category)}")
        if self.plan:
            parts.append(f"on the {self.plan.capitalize()} plan")
        return " ".join(parts)


def read_tool_query(args: Any) -> ToolQuery:
    """The query string of /tools/; an unknown category or plan sets ``error``."""
    query = ToolQuery(
        q=" ".join(args.get("q", "")[:MAX_QUERY_CHARS].split()),
        category=args.get("category", "").strip(),
        plan=args.get("plan", "").strip().lower(),
    )
    if query.category and query.category not in CATEGORIES:
        query.error = (
            f"There is no category “{query.category[:80]}”. Pick one of the list, or all "
            "categories."
        )
        query.category = ""
    elif query.plan and query.plan not in TOOL_PLANS:
        plans = ", ".join(plan.capitalize() for plan in TOOL_PLANS)
        query.error = f"There is no plan “{query.plan[:40]}” with tools. The plans are {plans}."
        query.plan = ""
    return query


def _wants_fragment() -> bool:
    """Whether htmx asks for the results alone (not to restore a page, nor a boosted link)."""
    headers = request.headers
    return (
        headers.get("HX-Request") == "true"
        and headers.get("HX-History-Restore-Request") != "true"
        and headers.get("HX-Boosted") != "true"
    )


@bp.get("/tools/")
def tools():
    """Every tool; ``?q=`` searches names, summaries and slugs, ``?category=`` and ``?plan=``
    filter. htmx gets the results alone (and the count, out of band)."""
    catalogue = tools_catalogue()
    query = read_tool_query(request.args)
    if query.error:
        found: list[Tool] = []
    else:
        found = catalogue.search(query.q, query.category or None, query.plan or None)
    cards = _cards()
    groups = cards_html = None
    if query.q or query.error:  # in order of relevance
        cards_html = cards.join(found, cards.missing())
    else:  # by category
        groups = cards.groups(found, query.category or None, query.plan or None)
    context = {
        "query": query,
        "count": len(found),
        "total": len(catalogue),
        "groups": groups,
        "cards": cards_html,
        "categories": catalogue.categories(),
        "plans": TOOL_PLANS,
        "max_query": MAX_QUERY_CHARS,
    }
    status = 400 if query.error else 200
    if _wants_fragment():
        html = render_template("site/_tool_results.html", oob=True, **context)
    else:
        html = render_template("site/tools.html", **context)
    response = Response(html, status=status, mimetype="text/html")
    for header in _VARY:
        response.vary.add(header)
    return response


# --- /workflows/ -----------------------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    """Steps that start together: each depends only on steps of earlier stages."""

    number: int
    steps: tuple[Any, ...]


def stages(workflow: Workflow) -> list[Stage]:
    """The workflow's steps by depth in its graph: stage 1 holds the steps that depend on
    none, stage n+1 those whose deepest dependency is in stage n (steps in their listed
    order within a stage). The steps of a stage run in parallel."""
    depth: dict[str, int] = {}
    for step in workflow.steps:
        _depth(workflow, step.id, depth)
    levels: dict[int, list] = {}
    for step in workflow.steps:
        levels.setdefault(depth[step.id], []).append(step)
    return [Stage(n + 1, tuple(levels[n])) for n in sorted(levels)]


def _depth(workflow: Workflow, step_id: str, depth: dict[str, int]) -> int:
    if step_id not in depth:
        deps = workflow.step(step_id).depends_on
        depth[step_id] = 1 + max((_depth(workflow, dep, depth) for dep in deps), default=-1)
    return depth[step_id]


def input_facts(workflow: Workflow) -> dict[str, Any]:
    """What a run takes, as the page shows it: text (and its length) or a file (and its
    types), its description and example."""
    schema = workflow.input
    accepts = schema.get("x-accept") or (
        [schema["contentMediaType"]] if "contentMediaType" in schema else []
    )
    return {
        "file": workflow.binary_input,
        "accepts": accepts,
        "description": schema.get("description", ""),
        "min_length": schema.get("minLength"),
        "max_length": schema.get("maxLength"),
        "example": workflow.example,
    }


@bp.get("/workflows/")
def workflows():
    """Every workflow: what it does, its steps, the plan and credits of a run."""
    return render_template("site/workflows.html", workflows=list(workflows_catalogue()))


@bp.get("/workflows/<workflow_id>/")
def workflow(workflow_id: str):
    """One workflow: its input, its steps in stages (what runs in parallel), plan, credits."""
    found = workflows_catalogue().get(workflow_id)
    if found is None:
        abort(404)
    catalogue = tools_catalogue()
    return render_template(
        "site/workflow.html",
        workflow=found,
        stages=stages(found),
        tools={step.tool: catalogue.get(step.tool) for step in found.steps},
        input=input_facts(found),
    )


# --- robots.txt, sitemap.xml -----------------------------------------------------------

ROBOTS_DISALLOW = (
    "/account/",
    "/runs/",
    # Each question asked costs the asker's limit and stores an answer: not for crawlers.
    "/assistant",
    "/v1/tools/run/",
    "/v1/public/tools/",
    "/v1/workflows/run/",
    "/v1/audiobooks/",
    "/v1/files/",
)


@bp.get("/robots.txt")
def robots_txt():
    """Crawl everything but accounts and runs (the site's and the API's); the sitemap."""
    lines = ["User-agent: *", *(f"Disallow: {path}" for path in ROBOTS_DISALLOW), "Allow: /"]
    lines += ["", f"Sitemap: {base_url()}/sitemap.xml", ""]
    return Response("\n".join(lines), mimetype="text/plain")


def sitemap_paths() -> list[str]:
    """Every page a search engine should know, as paths."""
    paths = ["/", "/tools/"]
    paths += [f"/tools/{slug}/" for slug in tools_catalogue().tools]
    paths.append("/workflows/")
    paths += [f"/workflows/{workflow.id}/" for workflow in workflows_catalogue()]
    paths += ["/pricing", "/docs", "/api/changelog/"]
    return paths


@bp.get("/sitemap.xml")
def sitemap_xml():
    """The sitemap (sitemaps.org 0.9) of the pages in ``sitemap_paths``, absolute."""
    base = base_url()
    urls = "".join(f"<url><loc>{escape(base + path)}</loc></url>\n" for path in sitemap_paths())
    xml = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"{urls}</urlset>\n"
    )
    return Response(xml, mimetype="application/xml")
