"""Pages and files anyone may open that carry an agency's brand: a shared run
(``/r/<share id>``), the brand's stylesheet (``/brand/<primary>-<accent>.css``) and its logo
(``/brand/logo/<sha256>``).

A shared run shows its tool, input and output and nothing of its account (no member, key or
other run), under the account's brand when it is an agency with one, else in the site's own
look; an unknown or unshared id is a 404. The brand's files are named by what they hold (the
colours, the hash of the logo's bytes), so they never change under their URL, are cached for
a year, and say nothing about which account uses them.
"""

from __future__ import annotations

from flask import abort, make_response, render_template, request

from blueprints.site.account.history import api_file_url, input_rows
from blueprints.site.output import blocks, raw_json
from blueprints.site.routes import bp
from catalogue import load_catalogue
from services import clock, runs, shared_runs, white_label

_YEAR = 365 * 24 * 60 * 60
# The logo is opened as an image by our pages; opened by itself it may do nothing at all.
_LOGO_CSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"


@bp.app_template_global("brand_for")
def brand_for_template(account_id: int | None):
    """The brand of ``account_id`` for a template that is given only the account (the
    widget page), read once per request however many of its blocks ask."""
    cache = request.environ.setdefault("svc.brands", {})
    if account_id not in cache:
        cache[account_id] = white_label.brand_for(account_id)
    return cache[account_id]


@bp.get("/r/<share_id>")
def shared_run(share_id: str):
    """A run a member shared: its tool, input and output, under the account's brand."""
    run = shared_runs.find_shared(share_id)
    if run is None:
        abort(404)
    catalogued = load_catalogue().get(run.tool_slug)
    tool = catalogued or runs.find_tool(run.tool_slug)
    output = None
    if tool is not None and run.output is not None:
        output = blocks(tool, run.output, api_file_url)
    page = render_template(
        "site/shared_run.html",
        run=run,
        name=tool.name if tool else run.tool_slug,
        tool_page=catalogued is not None,
        created=clock.as_utc(run.created_at),
        input_rows=input_rows(run.input),
        output=output,
        raw=raw_json(run.output) if run.output is not None else None,
        quality_note=runs.quality_note(run.model),
        brand=white_label.brand_for(run.account_id),
    )
    response = make_response(page)
    # Unsharing must end it at once: no copy kept anywhere. Never listed by search engines.
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Robots-Tag"] = "noindex, nofollow"
    return response


@bp.get("/brand/<colors>.css")
def brand_stylesheet(colors: str):
    """A brand's colours as CSS variables (``<primary>-<accent>``, hex digits or ``none``)."""
    css = white_label.stylesheet(colors)
    if css is None:
        abort(404)
    response = make_response(css)
    response.mimetype = "text/css"
    _forever(response)
    return response


@bp.get("/brand/logo/<sha256>")
def brand_logo(sha256: str):
    """A brand's logo as re-encoded on upload, by the SHA-256 of its bytes."""
    found = white_label.find_logo(sha256) if len(sha256) == 64 else None
    if found is None:
        abort(404)
    data, content_type = found
    response = make_response(data)
    response.headers["Content-Type"] = content_type
    response.headers["Content-Security-Policy"] = _LOGO_CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Disposition"] = "inline"
    response.set_etag(sha256)
    _forever(response)
    return response.make_conditional(request)


def _forever(response) -> None:
    """What the URL names never changes: cached anywhere for a year."""
    response.cache_control.public = True
    response.cache_control.max_age = _YEAR
    response.cache_control.immutable = True
