"""An agency's widget as other sites show it: ``/embed/<public id>`` (its tool's form and
output, framed only by its allowed origins) and the loader script ``/embed/v1/loader.js``
(docs/architecture/agency.md#widgets).

The page runs in a third-party iframe, where cookies do not work: it reads no session and
sets no cookie. What authorises a run instead is the signed token the page carries (15
minutes, bound to the widget and its public id: services/embeds.py), so this blueprint is
not the site's (no session CSRF check). A queued tool's run is shown at
``/embed/<public id>/runs/<run id>?token=<run token>`` (its progress, polled by htmx as the
site's run pages are, then its output and files), the token bound to the widget and that
run; any other run id, or another token, gets the empty answer. Its answers carry the
site's CSP with ``frame-ancestors`` set to exactly the widget's origins; an unknown,
disabled or rotated-away public id gets one fixed empty answer, so ids cannot be probed.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from flask import Blueprint, make_response, redirect, render_template, request, url_for
from markupsafe import Markup

from blueprints.site import prefill
from blueprints.site.forms import form_fields, read_form
from blueprints.site.output import blocks, raw_json
from extensions import db
from jobs import launch
from models import TERMINAL_STATES, Run
from services import embed_caps, embeds, inputs, run_ends, runs, urls

bp = Blueprint("embed", __name__)

LOADER = Path(__file__).resolve().parents[2] / "static" / "embed" / "v1" / "loader.js"
# The empty answer: the same for every id that shows nothing, whatever the reason.
EMPTY_STATUS = 404
EMPTY_BODY = '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Not available</title></head><body></body></html>\n'  # noqa: E501
# A widget's queued run still going after this long is failed (as the API's: its quota and
# the widget's caps given back).


def _csp(frame_ancestors: str) -> str:
    from blueprints.site import _CSP  # the site's directives (imported once registered)

    return _CSP.replace("frame-ancestors 'none'", f"frame-ancestors {frame_ancestors}")


def _headers(response, frame_ancestors: str = "'none'"):
    response.headers["Content-Security-Policy"] = _csp(frame_ancestors)
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "strict-origin-when-cross-origin"
    return response


def empty_answer():
    response = make_response(EMPTY_BODY, EMPTY_STATUS)
    response.mimetype = "text/html"
    return _headers(response)


def _page(widget: embeds.Live, status: int = 200, **context):
    tool = widget.tool
    fields = form_fields(tool)
    body = render_template(
        "embed/widget.html",
        tool=tool,
        embed=widget.embed,
        account_id=widget.embed.account_id,
        public_id=widget.embed.public_id,
        token=embeds.make_token(widget.embed),
        fields_html=Markup(
            render_template(
                "site/_tool_fields.html",
                fields=fields,
                values=context.pop("values", {}),
                errors=context.get("errors", {}),
            )
        ),
        has_files=any(field.kind == "file" for field in fields),
        site_url=urls.base_url(),
        available=tool.unavailable_reason is None,
        **context,
    )
    return _headers(make_response(body, status), embeds.frame_ancestors(widget.embed))


@bp.get("/embed/<public_id>")
def widget(public_id: str):
    """The widget: its tool's form, framed only by its allowed origins."""
    found = embeds.live(public_id)
    if found is None:
        return empty_answer()
    return _page(found)


@bp.post("/embed/<public_id>")
def run(public_id: str):
    """Run the widget's tool with the page's token: the page again, with the output (or a
    friendly refusal: an old token, a cap reached, a field to correct)."""
    found = embeds.live(public_id)
    if found is None:
        return empty_answer()
    tool = found.tool
    read = read_form(form_fields(tool), request.form, request.files)

    def refused(status: int, message: str, **more):
        return _page(found, status, values=read.shown, refusal=message, **more)

    try:
        embeds.check_token(found.embed, request.form.get("token"))
    except embeds.TokenRefused as bad:
        if bad.expired:
            return refused(
                400,
                "This form was open for a while and has expired. Reload the page and run it again.",
                reload=True,
            )
        return refused(400, "This form could not be checked. Reload the page and try again.")
    if read.errors:
        return refused(422, "Some fields need another look.", errors=read.errors)
    try:
        inputs.check(tool, read.body, read.uploads)
    except inputs.InputRejected as rejected:
        return refused(rejected.status, "Some fields need another look.", errors=rejected.errors)
    except inputs.ToolUnavailable:
        return refused(503, "This tool is not available right now. Try again later.")
    visitor = embed_caps.visitor_hash(request.remote_addr)
    try:
        ticket = embed_caps.admit(found.embed, visitor)
    except embed_caps.CapReached as capped:
        return _capped(found, read, capped)
    try:
        stored = inputs.store(tool, read.body, read.uploads, account_id=found.embed.account_id)
    except inputs.InputRejected as rejected:
        embed_caps.release(ticket)
        return refused(rejected.status, "Some fields need another look.", errors=rejected.errors)
    except BaseException:
        embed_caps.release(ticket)
        raise
    if tool.queue and not found.key.sandbox:  # a sandbox key's sample answers at once
        return _queue(found, stored, visitor, ticket, read)
    try:
        result = embeds.run(found, stored, visitor, ticket)
    except embed_caps.CapReached as capped:
        return _capped(found, read, capped)
    except runs.RunFailed as failed:
        runs.end_transaction()
        status = run_ends.FAILURE_STATUS.get(failed.kind, 500)
        return refused(status, _failure(failed.kind, failed.message))
    output = result.run.output or {}
    return _page(
        found,
        values=read.shown,
        run=result.run,
        output=blocks(tool, output, _file_url),
        raw=raw_json(output),
        quality_note=runs.quality_note(result.run.model),
    )


def _queue(found: embeds.Live, stored: dict, visitor: str, ticket: embed_caps.Ticket, read):
    """Submit the widget's queued run (as the API submits its key's) and show its page."""
    try:
        run = launch.queue_for_widget(found, stored, visitor, ticket)
    except embed_caps.CapReached as capped:
        return _capped(found, read, capped)
    return redirect(_run_url(found, run.id), 303)


def _run_url(found: embeds.Live, run_id: str, endpoint: str = "embed.run_page") -> str:
    return url_for(
        endpoint,
        public_id=found.embed.public_id,
        run_id=run_id,
        token=embeds.make_token(found.embed, run_id),
    )


def _widget_run(public_id: str, run_id: str, token: str | None):
    """The live widget and its run ``run_id`` shown by a run's ``token``; None for anything
    else (an unknown widget or run, another widget's run, a wrong or expired token)."""
    found = embeds.live(public_id)
    if found is None:
        return None
    try:
        embeds.check_token(found.embed, token, run_id=run_id)
    except embeds.TokenRefused:
        return None
    run = embeds.find_run(found.embed, run_id)
    return None if run is None else (found, run)


def _failure(kind: str, message: str) -> str:
    """What a visitor of the widget reads of a failed run: the tool's word on its input,
    else nothing of the provider's or the service's (the agency's concern, not theirs)."""
    if kind == "input":
        return message
    return "The tool could not finish this run. Try again in a moment."


def _run_context(found: embeds.Live, run: Run) -> dict:
    """What the status region (templates/site/_run_status.html) shows of a widget's run."""
    output = None
    if run.status == "succeeded" and run.output is not None:
        output = blocks(found.tool, run.output, _file_url)
    error = run.error or {}
    return {
        "run": run,
        "failure": _failure(error.get("code", ""), error.get("message", "")),
        "given_back": "It did not count against this tool's limits.",
        "output": output,
        "raw": raw_json(run.output) if run.output is not None else None,
        "quality_note": runs.quality_note(run.model),
        "finished": run.status in TERMINAL_STATES,
        # A fresh token with each answer: a widget polling a long run keeps seeing it.
        "status_url": _run_url(found, run.id, "embed.run_status"),
        "page_url": _run_url(found, run.id),
        "cancel_url": url_for("embed.cancel_run", public_id=found.embed.public_id, run_id=run.id),
        "run_token": embeds.make_token(found.embed, run.id),
    }


@bp.get("/embed/<public_id>/runs/<run_id>")
def run_page(public_id: str, run_id: str):
    """A queued run of the widget: its progress (polled), then its output and files."""
    shown = _widget_run(public_id, run_id, request.args.get("token"))
    if shown is None:
        return empty_answer()
    found, run = shown
    return _page(found, values=_shown_values(found, run), **_run_context(found, run))


@bp.get("/embed/<public_id>/runs/<run_id>/status")
def run_status(public_id: str, run_id: str):
    """The run's status region, which the widget's page polls (htmx) until the run ends."""
    shown = _widget_run(public_id, run_id, request.args.get("token"))
    if shown is None:
        return empty_answer()
    return _status_region(*shown)


def _status_region(found: embeds.Live, run: Run):
    body = render_template("site/_run_status.html", **_run_context(found, run))
    return _headers(make_response(body), embeds.frame_ancestors(found.embed))


@bp.post("/embed/<public_id>/runs/<run_id>/cancel")
def cancel_run(public_id: str, run_id: str):
    """Cancel the widget's run if it is still going (its quota and caps are given back)."""
    shown = _widget_run(public_id, run_id, request.form.get("token"))
    if shown is None:
        return empty_answer()
    found, run = shown
    if run_ends.cancel(run):
        db.session.commit()
    else:
        db.session.rollback()
    if request.headers.get("HX-Request"):
        return _status_region(found, run)
    return redirect(_run_url(found, run_id), 303)


def _shown_values(found: embeds.Live, run: Run) -> dict:
    """The form's values on the run's page: the run's inputs, as "run again" fills them."""
    return prefill.run_values(found.tool, run.input) if isinstance(run.input, dict) else {}


def _capped(found: embeds.Live, read, capped: embed_caps.CapReached):
    response = _page(found, 429, values=read.shown, refusal=capped.message, capped=True)
    response.headers["Retry-After"] = str(capped.retry_after)
    return response


def _file_url(file: dict) -> str:
    """A file a widget's run made, served as the API serves its account's files (the URL
    an unguessable capability), from this origin: the widget's CSP allows it ('self')."""
    return url_for("files.FileById", file_id=file["id"])


@lru_cache(maxsize=1)
def _loader_source() -> bytes:
    return LOADER.read_bytes()


@bp.get("/embed/v1/loader.js")
def loader():
    """The versioned loader script that pages include to show widgets."""
    response = make_response(_loader_source())
    response.mimetype = "text/javascript"
    response.headers["Cache-Control"] = "public, max-age=3600"
    response.headers["X-Content-Type-Options"] = "nosniff"
    # Any page may load it: it is the same for everyone and carries nothing of an account.
    response.headers["Cross-Origin-Resource-Policy"] = "cross-origin"
    return response
