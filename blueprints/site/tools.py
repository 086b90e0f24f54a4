"""Tool pages: what a tool does, a form made from its input schema, and runs of it for the
site's visitors, through the same services as the API (one validation, one run path, one
record), counted against the visitor's web allowance."""

from __future__ import annotations

from functools import lru_cache

from flask import (
    abort,
    make_response,
    redirect,
    render_template,
    request,
    url_for,
)
from flask_login import current_user
from markupsafe import Markup

from blueprints.site import prefill
from blueprints.site.access import may_be_signed_in
from blueprints.site.forms import FormField, csrf_token, example_values, form_fields, read_form
from blueprints.site.output import blocks, raw_json
from blueprints.site.routes import bp
from blueprints.site.snippets import snippets
from blueprints.site.visitor import current_visitor, is_bot
from catalogue import Tool, load_catalogue
from extensions import db
from jobs import launch
from services import allowance, inputs, run_ends, runs, urls

# Web visitors may run the tools of this plan (the API's base plan); those above need an
# account on their plan.
WEB_PLAN = "pro"
# A queued web run still going after this long is failed (its allowance given back).

# What a tool runs on, by engine: the text model (a provider's, or the embedded one), a
# provider alone, or (every other engine) a local engine on this service.
_ENGINE_KIND = {
    "llm.chat": "model",
    "vision.chat": "provider",
    "images.generate": "provider",
}


def plan_allows(tool: Tool, visitor) -> bool:
    """Whether the visitor's plan runs ``tool`` in the browser: every Pro tool for anyone
    (within the web allowance); a tool of a higher plan for members of such an account."""
    if tool.required_plan == WEB_PLAN:
        return True
    return visitor.plan is not None and visitor.plan.includes(tool.required_plan)


@lru_cache(maxsize=256)
def allowance_html(current: allowance.Allowance) -> Markup:
    """The runs left today, as every tool page shows them (the same for every visitor with
    the same count: made once per count and day)."""
    return Markup(render_template("site/_allowance.html", allowance=current))


def account_link() -> Markup:
    """The header's "Sign in" or "Account" link for this visitor (markup: the page rendered
    whole, not from its cached first view, puts it in as it is)."""
    if may_be_signed_in() and current_user.is_authenticated:
        return Markup(render_template("site/_account_link.html"))
    return _signed_out_link()


@lru_cache(maxsize=1)
def _signed_out_link() -> Markup:
    return Markup(render_template("site/_account_link.html"))


def _tool_or_404(slug: str) -> Tool:
    tool = load_catalogue().get(slug)
    if tool is None:
        abort(404)
    return tool


def runs_on(tool: Tool) -> str:
    """What the tool runs on: "offline" (a local engine), "model" or "provider"."""
    return _ENGINE_KIND.get(tool.engine, "offline")


def _page(tool: Tool, *, status: int = 200, **context):
    """The tool page (or, for htmx, its runner section alone), with ``context``."""
    values = context.pop("values", None)
    if values is None:
        values = example_values(tool) if request.args.get("example") else {}
    errors = context.pop("errors", {})
    shown_inputs = context.pop("inputs", None)
    visitor = current_visitor().visitor
    current = allowance.current(visitor)
    plan_ok = plan_allows(tool, visitor)
    per_visitor = {
        "csrf": csrf_token(),
        "allowance": current,
        "allowance_html": allowance_html(current),
        "account_link": account_link(),
        "plan_ok": plan_ok,
    }
    htmx = bool(request.headers.get("HX-Request"))
    as_first_seen = plan_ok == (tool.required_plan == WEB_PLAN)
    if as_first_seen and not (values or errors or context or htmx or status != 200):
        # The page as most visitors first see it: made once, the visitor's parts put in.
        # Its absolute URLs are on PUBLIC_BASE_URL, whatever Host the request names.
        body = _unfilled_page(
            tool,
            urls.base_url(),
            request.script_root,
            tool.unavailable_reason,
            tool.best_with_provider,
        )
        body = body.replace(_CSRF_SLOT, per_visitor["csrf"])
        body = body.replace(_ALLOWANCE_SLOT, per_visitor["allowance_html"])
        body = body.replace(_ACCOUNT_SLOT, per_visitor["account_link"])
    else:
        fields = _form_fields(tool)
        shown = (values or example_values(tool)) if shown_inputs is None else shown_inputs
        body = render_template(
            "site/tool_runner.html" if htmx else "site/tool.html",
            **_page_context(tool, fields, values, errors),
            snippets=_snippets(tool, fields, _snippet_inputs(fields, shown)),
            **per_visitor,
            **context,
        )
    response = make_response(body, status)
    response.vary.add("HX-Request")
    return response


def _page_context(tool: Tool, fields: list[FormField], values: dict, errors: dict) -> dict:
    return {
        "tool": tool,
        "fields": fields,
        "fields_html": _fields_html(tool, fields, values, errors),
        "errors": errors,
        "runs_on": runs_on(tool),
        "reason": tool.unavailable_reason,
        "best_with_provider": tool.best_with_provider,
        # Its embedded-model answers are refused when they name facts the input lacks.
        "keeps_facts": "facts" in tool.params.get("checks", {}),
    }


# Where the cached page takes the visitor's own parts (characters no rendering produces).
_CSRF_SLOT = "\x00csrf\x00"
_ALLOWANCE_SLOT = "\x00allowance\x00"
_ACCOUNT_SLOT = "\x00account\x00"


@lru_cache(maxsize=1024)
def _unfilled_page(
    tool: Tool, base_url: str, script_root: str, reason: str | None, embedded_only: bool
) -> str:
    """The whole page of ``tool`` as first seen, for one public address (``base_url``, its
    absolute URLs' start) and one state of the tool's availability (``reason``,
    ``embedded_only``: whether it is best with a provider), with slots for the visitor's
    parts."""
    fields = _form_fields(tool)
    return render_template(
        "site/tool.html",
        **_page_context(tool, fields, {}, {}),
        snippets=_example_snippets(tool, urls.base_url()),
        csrf=_CSRF_SLOT,
        allowance=None,
        allowance_html=Markup(_ALLOWANCE_SLOT),
        account_link=Markup(_ACCOUNT_SLOT),
        plan_ok=tool.required_plan == WEB_PLAN,
    )


# What every first view of a tool page shows the same way, made once per tool (and address
# the page is seen on): its form's fields, their HTML unfilled and the API panel's code for
# the example. (Rendering them was most of the page's time: docs/contributing/benchmarks/site.md.)
_CACHE_SIZE = 2048


@lru_cache(maxsize=_CACHE_SIZE)
def _form_fields(tool: Tool) -> list[FormField]:
    return form_fields(tool)


def _fields_html(tool: Tool, fields: list[FormField], values: dict, errors: dict) -> Markup:
    if values or errors:
        return Markup(
            render_template("site/_tool_fields.html", fields=fields, values=values, errors=errors)
        )
    return _unfilled_fields_html(tool)


@lru_cache(maxsize=_CACHE_SIZE)
def _unfilled_fields_html(tool: Tool) -> Markup:
    fields = _form_fields(tool)
    return Markup(render_template("site/_tool_fields.html", fields=fields, values={}, errors={}))


def _snippets(tool: Tool, fields: list[FormField], inputs: dict) -> dict[str, str]:
    if inputs == example_values(tool):
        return _example_snippets(tool, urls.base_url())
    return snippets(tool, fields, inputs, urls.base_url())


@lru_cache(maxsize=_CACHE_SIZE)
def _example_snippets(tool: Tool, base_url: str) -> dict[str, str]:
    return snippets(tool, _form_fields(tool), example_values(tool), base_url)


def _snippet_inputs(fields: list[FormField], values: dict) -> dict:
    names = {spec.name for spec in fields}
    return {name: value for name, value in values.items() if name in names and value != ""}


@bp.get("/tools/<slug>/")
def tool_page(slug: str):
    """A tool: what it does, its form, the same call as code; ``?from_run=<run id>`` (one
    of the visitor's runs: "run again") fills the form with that run's input."""
    tool = _tool_or_404(slug)
    return _page(tool, values=prefill.tool_values(tool) if "from_run" in request.args else None)


@bp.post("/tools/<slug>/")
def run_tool(slug: str):
    """Run the tool for this visitor: the answer is the page with the output, or, for a
    queued tool, the run's page (its progress and then its output)."""
    tool = _tool_or_404(slug)
    site_visitor = current_visitor()
    visitor = site_visitor.visitor
    fields = _form_fields(tool)
    read = read_form(fields, request.form, request.files)

    def refused(status: int, message: str, **more):
        # The API panel shows the typed inputs (as the form's own updates of it do), not
        # the form's text: "top": "4" would be refused by the API.
        return _page(
            tool, status=status, values=read.shown, inputs=read.body, refusal=message, **more
        )

    if request.form.get("website") or is_bot():
        return refused(403, "Automated requests cannot run tools here. Use the API instead.")
    if site_visitor.tampered:
        return refused(
            400,
            "Your visitor cookie could not be read, so this run was not started. A new "
            "one has been set: send the form again.",
        )
    if not plan_allows(tool, visitor):
        return refused(
            402,
            f"This tool needs the {tool.required_plan.capitalize()} plan.",
            upgrade=tool.required_plan,
        )
    if read.errors:
        return refused(422, "Some fields need another look.", errors=read.errors)
    try:
        inputs.check(tool, read.body, read.uploads)
    except inputs.InputRejected as rejected:
        return refused(rejected.status, "Some fields need another look.", errors=rejected.errors)
    except inputs.ToolUnavailable as unavailable:
        return refused(503, str(unavailable))
    try:
        ticket = allowance.reserve(visitor)
    except allowance.AllowanceExhausted as exhausted:
        signup = None if visitor.account_id is not None else url_for("site.signup")
        return refused(
            429,
            "",
            exhausted=exhausted.allowance,
            by_address=exhausted.by_address,
            signup_url=signup,
        )
    try:
        stored = inputs.store(tool, read.body, read.uploads, account_id=visitor.account_id)
    except inputs.InputRejected as rejected:
        allowance.release(ticket)
        return refused(rejected.status, "Some fields need another look.", errors=rejected.errors)
    except BaseException:
        allowance.release(ticket)
        raise
    if tool.queue:
        return _queue(tool, visitor, stored, ticket)
    try:
        result = runs.run_for_visitor(visitor, tool, stored, ticket)
    except runs.RunFailed as failed:
        db.session.commit()
        status = run_ends.FAILURE_STATUS.get(failed.kind, 500)
        return refused(status, failed.message, failed_run=failed.run)
    runs.end_transaction()
    return _page(
        tool,
        values=read.shown,
        inputs=read.body,
        run=result.run,
        output=blocks(tool, result.run.output or {}, _file_url(result.run.id)),
        raw=raw_json(result.run.output or {}),
        quality_note=runs.quality_note(result.run.model),
    )


def _queue(tool: Tool, visitor, stored: dict, ticket):
    run = launch.queue_for_visitor(visitor, tool, stored, ticket)
    target = url_for("site.run_page", run_id=run.id)
    if request.headers.get("HX-Request"):
        response = make_response("", 200)
        response.headers["HX-Location"] = target
        return response
    return redirect(target, 303)


@bp.post("/tools/<slug>/snippets")
def tool_snippets(slug: str):
    """The API panel for the inputs now in the form (htmx, as the form changes)."""
    tool = _tool_or_404(slug)
    fields = _form_fields(tool)
    read = read_form(fields, request.form, request.files)
    response = make_response(
        render_template(
            "site/_snippets.html",
            tool=tool,
            snippets=snippets(tool, fields, read.body, urls.base_url()),
        )
    )
    response.headers["Cache-Control"] = "no-store"
    return response


def _file_url(run_id: str):
    def url(file: dict) -> str:
        return url_for("site.run_file", run_id=run_id, file_id=file["id"])

    return url
