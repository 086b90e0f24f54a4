"""An account's run history: its tool runs (web and API) and workflow runs, newest first,
filtered by tool or workflow, status, source and key, a page at a time by keyset (the
newest run after the last one shown), and one run of the account by id.

A workflow run's steps are tool runs too; the history lists the workflow run, whose page
shows its steps. A workflow run without a key was started on the site (its steps are web
runs of the member who started it: services/workflows.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, case, false, func, literal, or_, select, union_all

from extensions import db
from models import RUN_STATES, Run, WorkflowRun
from services import clock
from services.recorder import recorder

PAGE_SIZE = 25
STATUSES = tuple(state for state in RUN_STATES if state != "pending")
SOURCES = ("api", "mcp", "web", "embed")
_MAX_SLUG = 100


@dataclass(frozen=True)
class RunFilters:
    tool: str | None = None  # a tool slug or a workflow id
    status: str | None = None
    source: str | None = None
    key_id: str | None = None

    def query(self) -> dict[str, str]:
        args = {"tool": self.tool, "status": self.status, "source": self.source}
        return {name: value for name, value in (args | {"key": self.key_id}).items() if value}

    @property
    def any(self) -> bool:
        return bool(self.query())


def read_filters(args, key_ids: set[str]) -> tuple[RunFilters, dict[str, str]]:
    """The filters in ``args``, and a message per refused value (that filter is then off)."""
    errors: dict[str, str] = {}
    values: dict = {}
    tool = args.get("tool", "").strip()
    if tool:
        if len(tool) <= _MAX_SLUG:
            values["tool"] = tool
        else:
            errors["tool"] = f"A tool's slug or a workflow's id has at most {_MAX_SLUG} characters."
    status = args.get("status", "").strip()
    if status:
        if status in STATUSES:
            values["status"] = status
        else:
            errors["status"] = "Choose one of the listed states."
    source = args.get("source", "").strip()
    if source:
        if source in SOURCES:
            values["source"] = source
        else:
            errors["source"] = "Choose API, web or widgets."
    key_id = args.get("key", "").strip()
    if key_id:
        if key_id in key_ids:
            values["key_id"] = key_id
        else:
            errors["key"] = "This account has no such key."
    return RunFilters(**values), errors


@dataclass(frozen=True)
class RunRow:
    """A line of the history."""

    id: str
    kind: str  # tool or workflow
    name: str  # the tool's slug or the workflow's id
    status: str
    source: str
    api_key_id: str | None
    credits: int
    created_at: datetime
    duration_ms: int | None


_TOOL_RUNS = Run.__table__
_WORKFLOW_RUNS = WorkflowRun.__table__


def _tool_runs(account_id: int, filters: RunFilters):
    t = _TOOL_RUNS.c
    query = select(
        t.id, literal("tool").label("kind"), t.tool_slug.label("name"), t.status, t.source,
        t.api_key_id, t.credits, t.created_at, t.duration_ms,
    ).where(t.account_id == account_id, t.workflow_run_id.is_(None))  # fmt: skip
    if filters.tool:
        query = query.where(t.tool_slug == filters.tool)
    if filters.status:
        query = query.where(t.status == filters.status)
    if filters.source:
        query = query.where(t.source == filters.source)
    if filters.key_id:
        query = query.where(t.api_key_id == filters.key_id)
    return query


def _workflow_runs(account_id: int, filters: RunFilters):
    w = _WORKFLOW_RUNS.c
    source = case((w.api_key_id.is_(None), literal("web")), else_=literal("api"))
    query = select(
        w.id, literal("workflow").label("kind"), w.workflow_id.label("name"), w.status,
        source.label("source"), w.api_key_id, literal(0).label("credits"), w.created_at,
        w.duration_ms,
    ).where(w.account_id == account_id)  # fmt: skip
    if filters.tool:
        query = query.where(w.workflow_id == filters.tool)
    if filters.status:
        query = query.where(w.status == filters.status)
    if filters.source == "web":
        query = query.where(w.api_key_id.is_(None))
    elif filters.source == "api":
        query = query.where(w.api_key_id.isnot(None))
    elif filters.source in ("embed", "mcp"):  # widgets run tools, never workflows
        # (a workflow an MCP client starts counts under its key's API runs)
        query = query.where(false())
    if filters.key_id:
        query = query.where(w.api_key_id == filters.key_id)
    return query


@dataclass(frozen=True)
class Page:
    rows: list[RunRow]
    # The id of the last run shown, when there are older ones (the next page's ``before``).
    next_before: str | None


class UnknownCursor(Exception):
    """``before`` names no run of the account."""


def cursor_of(account_id: int, run_id: str) -> tuple[datetime, str]:
    """Where the page after run ``run_id`` starts: its creation time and id."""
    if len(run_id) > 36:
        raise UnknownCursor(run_id)
    for table in (_TOOL_RUNS, _WORKFLOW_RUNS):
        created = db.session.scalar(
            select(table.c.created_at).where(table.c.id == run_id, table.c.account_id == account_id)
        )
        if created is not None:
            return created, run_id
    raise UnknownCursor(run_id)


def page(
    account_id: int,
    filters: RunFilters,
    before: tuple[datetime, str] | None = None,
    size: int = PAGE_SIZE,
) -> Page:
    """The account's runs matching ``filters``, newest first, from just after ``before`` (a
    run's creation time and id; None: from the newest), ``size`` of them."""
    parts = []
    for made in (_tool_runs, _workflow_runs):
        query = made(account_id, filters)
        table = _TOOL_RUNS if made is _tool_runs else _WORKFLOW_RUNS
        if before is not None:
            moment, run_id = before
            query = query.where(
                or_(
                    table.c.created_at < moment,
                    and_(table.c.created_at == moment, table.c.id < run_id),
                )
            )
        # Each side newest first and cut to the page, so either reads its index only that far.
        parts.append(query.order_by(table.c.created_at.desc(), table.c.id.desc()).limit(size + 1))
    union = union_all(*(part.subquery().select() for part in parts)).subquery()
    rows = db.session.execute(
        select(union).order_by(union.c.created_at.desc(), union.c.id.desc()).limit(size + 1)
    ).all()
    more = len(rows) > size
    rows = rows[:size]
    credits = _workflow_credits([row.id for row in rows if row.kind == "workflow"])
    found = [
        RunRow(
            row.id,
            row.kind,
            row.name,
            row.status,
            row.source,
            row.api_key_id,
            credits.get(row.id, row.credits),
            clock.as_utc(row.created_at),
            row.duration_ms,
        )
        for row in rows
    ]
    return Page(found, found[-1].id if more and found else None)


def _workflow_credits(workflow_run_ids: list[str]) -> dict[str, int]:
    """What the steps of these workflow runs cost so far."""
    if not workflow_run_ids:
        return {}
    t = _TOOL_RUNS.c
    return dict(
        db.session.execute(
            select(t.workflow_run_id, func.coalesce(func.sum(t.credits), 0))
            .where(t.workflow_run_id.in_(workflow_run_ids))
            .group_by(t.workflow_run_id)
        ).all()
    )


def find(account_id: int, run_id: str) -> Run | WorkflowRun | None:
    """The account's tool run or workflow run ``run_id``, or None (another account's run is
    as good as missing)."""
    run = find_any(run_id)
    return run if run is not None and run.account_id == account_id else None


def find_any(run_id: str) -> Run | WorkflowRun | None:
    """The tool run or workflow run ``run_id`` of whoever made it (the caller checks who may
    see it), or None. An inline run answered a moment ago may not be written yet: it is read
    from the recorder."""
    if len(run_id) > 36:
        return None
    run = db.session.get(Run, run_id)
    if run is None:
        pending = recorder().pending(run_id)
        if pending is not None:
            run = Run(**{name: value for name, value in pending.items() if hasattr(Run, name)})
    if run is None:
        run = db.session.get(WorkflowRun, run_id)
    return run
