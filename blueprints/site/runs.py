"""A visitor's web runs: the run page (progress, then the output), its status for htmx to
poll, its events (the text its model writes, as it is written: the page's script shows it
growing), cancel, and the files it made. Only the visitor who made a run sees it: to anyone
else it does not exist (404)."""

from __future__ import annotations

from flask import abort, make_response, redirect, render_template, request, url_for

from blueprints.api.events import event_stream, status_ending
from blueprints.api.files.answer import file_response
from blueprints.site.output import blocks, raw_json
from blueprints.site.routes import bp
from blueprints.site.visitor import current_visitor
from catalogue import load_catalogue
from extensions import db
from models import TERMINAL_STATES, Run
from services import run_ends, runs, storage
from services.recorder import recorder
from services.run_events import END, run_events


def _own_run(run_id: str) -> Run:
    """This visitor's web run, or 404. An inline run answered a moment ago may not be
    written yet: it is read from the recorder."""
    run = db.session.get(Run, run_id) if len(run_id) <= 36 else None
    if run is None and len(run_id) <= 36 and (row := recorder().pending(run_id)) is not None:
        run = Run(**row)
    if run is None or run.source != "web" or run.visitor_id != current_visitor().visitor.id:
        abort(404)
    return run


def _context(run: Run) -> dict:
    tool = load_catalogue().get(run.tool_slug)
    output = None
    if tool is not None and run.status == "succeeded" and run.output is not None:
        output = blocks(tool, run.output, lambda file: _file_url(run.id, file))
    return {
        "run": run,
        "tool": tool,
        "output": output,
        "raw": raw_json(run.output) if run.output is not None else None,
        "quality_note": runs.quality_note(run.model),
        "finished": run.status in TERMINAL_STATES,
    }


def _file_url(run_id: str, file: dict) -> str:
    return url_for("site.run_file", run_id=run_id, file_id=file["id"])


@bp.get("/runs/<run_id>/")
def run_page(run_id: str):
    """A web run: its progress while it runs, then its output."""
    response = make_response(render_template("site/run.html", **_context(_own_run(run_id))))
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/runs/<run_id>/status")
def run_status(run_id: str):
    """The run's status region (htmx polls it until the run ends)."""
    response = make_response(render_template("site/_run_status.html", **_context(_own_run(run_id))))
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/runs/<run_id>/events")
def run_event_stream(run_id: str):
    """The run's events as server-sent events, as the API streams them (``delta``, ``reset``),
    ended by ``done`` or ``error`` with the run's status only: the page then asks for its
    status region, which shows the output or the failure."""
    return event_stream(_own_run(run_id), request.headers.get("Last-Event-ID"), status_ending)


@bp.post("/runs/<run_id>/cancel")
def cancel_run(run_id: str):
    """Cancel the run if it is still going (its allowance is given back)."""
    run = _own_run(run_id)
    if run_ends.cancel(run):
        db.session.commit()
        run_events().append(run.id, END)  # its page's stream ends at once
    else:
        db.session.rollback()
    if request.headers.get("HX-Request"):
        return run_status(run_id)
    return redirect(url_for("site.run_page", run_id=run_id), 303)


@bp.get("/runs/<run_id>/files/<file_id>")
def run_file(run_id: str, file_id: str):
    """A file the run made, for the visitor who made it."""
    run = _own_run(run_id)
    stored = storage.find(file_id)
    if stored is None or stored.run_id != run.id:
        abort(404)
    return file_response(stored)
