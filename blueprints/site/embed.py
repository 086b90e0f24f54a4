"""An agency's widget as other sites show it: ``/embed/<public id>`` (its tool's form and
output, framed only by its allowed origins) and the loader script ``/embed/v1/loader.js``
(DESIGN.md section 11, "Agency: embeds").

The page runs in a third-party iframe, where cookies do not work: it reads no session and
sets no cookie. What authorises a run instead is the signed token the page carries (15
minutes, bound to the widget and its public id: services/embeds.py), so this blueprint is
not the site's (no session CSRF check). Its answers carry the site's CSP with
``frame-ancestors`` set to exactly the widget's origins; an unknown, disabled or rotated-away
public id gets one fixed empty answer, so ids cannot be probed.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from flask import Blueprint, make_response, render_template, request
from markupsafe import Markup

from blueprints.site.forms import form_fields, read_form
from blueprints.site.output import blocks, raw_json
from services import embeds, inputs, runs

bp = Blueprint("embed", __name__)

LOADER = Path(__file__).resolve().parents[2] / "static" / "embed" / "v1" / "loader.js"
# The empty answer: the same for every id that shows nothing, whatever the reason.
EMPTY_STATUS = 404
EMPTY_BODY = '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Not available</title></head><body></body></html>\n'  # noqa: E501


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
        site_url=embeds.base_url(),
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
    visitor = embeds.visitor_hash(request.remote_addr)
    try:
        ticket = embeds.admit(found.embed, visitor)
    except embeds.CapReached as capped:
        return _capped(found, read, capped)
    try:
        stored = inputs.store(tool, read.body, read.uploads, account_id=found.embed.account_id)
    except inputs.InputRejected as rejected:
        embeds.release(ticket)
        return refused(rejected.status, "Some fields need another look.", errors=rejected.errors)
    except BaseException:
        embeds.release(ticket)
        raise
    try:
        result = embeds.run(found, stored, visitor, ticket)
    except embeds.CapReached as capped:
        return _capped(found, read, capped)
    except runs.RunFailed as failed:
        runs.end_transaction()
        status = {"input": 422, "provider": 503}.get(failed.kind, 500)
        message = failed.message if failed.kind == "input" else (
            "The tool could not finish this run. Try again in a moment."
        )  # fmt: skip
        return refused(status, message)
    output = result.run.output or {}
    return _page(
        found,
        values=read.shown,
        run=result.run,
        output=blocks(tool, output, _no_files),
        raw=raw_json(output),
    )


def _capped(found: embeds.Live, read, capped: embeds.CapReached):
    response = _page(found, 429, values=read.shown, refusal=capped.message, capped=True)
    response.headers["Retry-After"] = str(capped.retry_after)
    return response


def _no_files(file: dict) -> str:
    """Embeddable tools make no files (services/embeds.embeddable_reason)."""
    return "#"


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
