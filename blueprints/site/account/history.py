"""The account's run history (``/account/runs/``): its web and API runs and workflow runs,
newest first, filtered in the URL (tool, status, source, key), a page at a time; a run's
page with its input and output and "run again"; a queued run's or workflow run's live
progress (htmx polls a fragment inside a ``role="status"`` region) and cancel. Every member
sees the account's runs; another account's run id is a 404, as if it did not exist."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from flask import abort, g, make_response, redirect, render_template, request, url_for

from blueprints.api.events import event_stream, status_ending
from blueprints.api.workflows.runs import run_record
from blueprints.site.access import member_required
from blueprints.site.account.dashboard import fragment_aware, wants_fragment
from blueprints.site.forms import field_label
from blueprints.site.output import blocks, raw_json
from blueprints.site.routes import bp
from catalogue import load_catalogue
from extensions import db
from models import TERMINAL_STATES, Run, User, WorkflowRun
from services import clock, run_ends, run_history, runs, usage_dashboard, workflows
from services.run_events import END, run_events

STATE_NAMES = {
    "pending": "waiting for earlier steps",
    "queued": "waiting in the queue",
    "running": "running",
    "succeeded": "succeeded",
    "failed": "failed",
    "canceled": "canceled",
}


def _keys_by_id(account_id: int) -> dict[str, Any]:
    return {key.id: key for key in usage_dashboard.account_keys(account_id)}


@bp.get("/account/runs/")
@member_required()
def run_history_page():
    """The account's runs, newest first, filtered (``?tool=&status=&source=&key=``), a page at
    a time (``?before=<the last run shown>``)."""
    account = g.account
    keys = _keys_by_id(account.id)
    filters, errors = run_history.read_filters(request.args, set(keys))
    before = request.args.get("before", "").strip()
    cursor = None
    if before:
        try:
            cursor = run_history.cursor_of(account.id, before)
        except run_history.UnknownCursor:
            errors["before"] = "That page of runs is gone; here are the newest."
    found = run_history.page(account.id, filters, cursor)
    context = {
        "filters": filters,
        "errors": errors,
        "found": found,
        "keys": keys,
        "before": before if cursor else "",
        "tools": load_catalogue(),
        "workflows": workflows.find_workflow,
        "statuses": run_history.STATUSES,
        "state_names": STATE_NAMES,
    }
    fragment = wants_fragment()
    body = render_template(
        "site/account/partials/run_list.html" if fragment else "site/account/runs.html",
        **context,
    )
    return fragment_aware(make_response(body, 400 if errors else 200))


def _own(run_id: str) -> Run | WorkflowRun:
    run = run_history.find(g.account.id, run_id)
    if run is None:
        abort(404)
    return run


def api_file_url(file: dict) -> str:
    """A run's file as the API links it (its URL is an unguessable capability)."""
    return file.get("url") or url_for("files.FileById", file_id=file["id"])


def input_rows(values) -> list[tuple[str, str, Any]]:
    """A run's input as (label, kind, value) rows, kind text, file (a stored file's
    reference) or json."""
    if _is_file_reference(values):
        return [("Input", "file", values)]
    if not isinstance(values, dict):
        return [("Input", "text", values)]
    rows = []
    for name, value in values.items():
        label = field_label(name)
        if _is_file_reference(value):
            rows.append((label, "file", value))
        elif isinstance(value, str):
            rows.append((label, "text", value))
        else:
            rows.append((label, "json", raw_json(value)))
    return rows


def _is_file_reference(value) -> bool:
    return isinstance(value, dict) and "file_id" in value


def _who(run) -> str:
    """Who started the run: the key's name and hint, or the member's email."""
    if run.api_key_id:
        key = _keys_by_id(run.account_id).get(run.api_key_id)
        return f"API key {key.name} ({key.hint})" if key else "An API key since deleted"
    user_id = getattr(run, "user_id", None)
    if user_id is None and isinstance(run, WorkflowRun):
        user_id = next((step.user_id for step in workflows.step_runs(run.id)), None)
    user = db.session.get(User, user_id) if user_id else None
    return f"{user.email} on the site" if user else "On the site"


def _tool_context(run: Run) -> dict:
    tool = load_catalogue().get(run.tool_slug) or runs.find_tool(run.tool_slug)
    output = None
    if tool is not None and run.status == "succeeded" and run.output is not None:
        output = blocks(tool, run.output, api_file_url)
    again = None
    if tool is not None and load_catalogue().get(run.tool_slug) is not None:
        again = url_for("site.tool_page", slug=tool.slug, from_run=run.id)
    return {
        "kind": "tool",
        "name": tool.name if tool else run.tool_slug,
        "input_rows": input_rows(run.input),
        "output": output,
        "raw": raw_json(run.output) if run.output is not None else None,
        "quality_note": runs.quality_note(run.model),
        "again": again,
        "steps": None,
        "progress": None,
    }


def _workflow_context(run: WorkflowRun) -> dict:
    workflow = workflows.find_workflow(run.workflow_id)
    record = run_record(run)
    tools = load_catalogue()
    steps = []
    for step in record["steps"]:
        tool = tools.get(step["tool"])
        steps.append({**step, "name": tool.name if tool else step["tool"]})
    output = None
    if run.status == "succeeded" and run.output is not None and workflow is not None:
        as_tool = SimpleNamespace(engine="llm.chat", output=workflow.output_schema)
        output = blocks(as_tool, run.output, api_file_url)
    again = None
    if workflow is not None and isinstance(run.input, str):
        again = url_for("site.workflow", workflow_id=workflow.id, from_run=run.id) + "#start"
    return {
        "kind": "workflow",
        "name": workflow.name if workflow else run.workflow_id,
        "input_rows": input_rows(run.input),
        "output": output,
        "raw": raw_json(run.output) if run.output is not None else None,
        "again": again,
        "steps": steps,
        "progress": record["progress"],
        "credits": record["credits"],
    }


def _context(run: Run | WorkflowRun) -> dict:
    context = _workflow_context(run) if isinstance(run, WorkflowRun) else _tool_context(run)
    context.setdefault("credits", getattr(run, "credits", 0))
    finished = run.status in TERMINAL_STATES
    # What the page shows of the run's state: a poll whose page saw the same is answered
    # without the details (nothing to redraw, and a focused button keeps its focus).
    states = [run.status, *(step["status"] for step in context["steps"] or ())]
    digest = "-".join(states)
    step_of_workflow = isinstance(run, Run) and run.workflow_run_id is not None
    return {
        "run": run,
        "created": clock.as_utc(run.created_at),
        "who": _who(run),
        "finished": finished,
        "cancelable": not finished and not step_of_workflow,
        "digest": digest,
        "changed": request.args.get("seen") != digest,
        "has_files": any(kind == "file" for _, kind, _ in context["input_rows"]),
        "state_names": STATE_NAMES,
        **context,
    }


@bp.get("/account/runs/<run_id>/")
@member_required()
def account_run(run_id: str):
    """One run of the account: its input, its progress or output, run again, cancel."""
    run = _own(run_id)
    body = render_template("site/account/run.html", **_context(run))
    return fragment_aware(make_response(body))


@bp.get("/account/runs/<run_id>/progress")
@member_required()
def account_run_progress(run_id: str):
    """The run's progress (htmx polls it until the run ends), its steps, actions and output
    swapped beside it."""
    run = _own(run_id)
    body = render_template("site/account/partials/run_progress.html", oob=True, **_context(run))
    return fragment_aware(make_response(body))


@bp.get("/account/runs/<run_id>/events")
@member_required()
def account_run_events(run_id: str):
    """The run's events as server-sent events, as the API streams them (a workflow run's:
    its steps' starts, text and ends), ended by ``done`` or ``error`` with the run's status
    only: the page then asks for its progress, which shows the output or the failure."""
    run = _own(run_id)
    return event_stream(run, request.headers.get("Last-Event-ID"), status_ending)


@bp.post("/account/runs/<run_id>/cancel")
@member_required()
def cancel_account_run(run_id: str):
    """Cancel a run that has not ended (a workflow run: its unfinished steps), as the API's
    cancel does; a run that has ended stays as it is."""
    run = _own(run_id)
    if isinstance(run, WorkflowRun):
        canceled = workflows.cancel(run)
    elif run.workflow_run_id is None:
        canceled = run_ends.cancel(run)
    else:  # a step: its workflow run is what is canceled, from its own page
        canceled = False
    if canceled:
        db.session.commit()
        run_events().append(run.id, END)  # its page's stream ends at once
    else:
        db.session.rollback()
    if request.headers.get("HX-Request"):
        return account_run_progress(run_id)
    return redirect(url_for("site.account_run", run_id=run_id), 303)
