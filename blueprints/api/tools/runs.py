"""How the API runs a tool and answers about its runs, for every endpoint that starts or
reads tool runs: the run endpoints (``blueprints.api.tools``), the plan-gated endpoints
(``blueprints.api.plan_gated``), workflows (a step's failure), and the MCP endpoint. Reading
a run's body and inputs, starting it (through ``jobs.launch``, as every entry point does),
waiting as ``Prefer`` says, and what a run answers: its result, its record, the problem
document of its failure and the last event of its stream."""

import contextlib

from flask import current_app, jsonify, request, url_for
from werkzeug.datastructures import FileStorage

from blueprints.api.events import event_stream
from blueprints.api.pipeline import (
    InvalidJson,
    admit_run,
    current_key,
    likely_admitted,
    note_usage,
    parse_json,
    parse_prefer,
    quota_problem,
    read_body,
    require_plan,
    too_large,
    validation_failed,
)
from blueprints.api.problems import Problem, problem_body
from blueprints.api.schemas import RunRecordSchema
from catalogue import Tool, load_catalogue
from engines import get_engine
from extensions import db
from jobs import launch
from models import Run
from services import clock, inputs, run_ends, runs
from services.recorder import recorder
from services.runs import QuotaExceeded, RunFailed
from services.urls import absolute_url_for


def run_body() -> tuple[dict, dict[str, FileStorage]]:
    """A run's body: JSON or multipart, up to the file limit (text tools check 1 MiB later)."""
    return read_body(max_bytes=current_app._get_current_object().config["MAX_CONTENT_LENGTH"])


def find_tool(slug: str) -> Tool:
    tool = load_catalogue().get(slug)
    if tool is None:
        raise Problem(404, "tool_not_found", f"There is no tool with the slug {slug!r}.")
    return tool


def tool_inputs(tool: Tool, body: dict, uploads: dict[str, FileStorage]) -> dict:
    """The tool's inputs from the request's body, form values typed first (``checked_inputs``;
    413 for a text tool's body over ``MAX_TEXT_BODY``)."""
    # One proxy lookup each (blueprints/api/pipeline/keys.py says why).
    this_request = request._get_current_object()
    if this_request.mimetype == "multipart/form-data":
        body = _typed_form(tool, body)
    return checked_inputs(tool, body, uploads, this_request.content_length or 0)


def checked_inputs(tool: Tool, body: dict, uploads: dict[str, FileStorage], size: int) -> dict:
    """The tool's inputs from ``body`` and ``uploads`` (services/inputs.py), checked and
    stored: 413 for a text tool sent more than ``MAX_TEXT_BODY`` bytes (``size``) or a file
    too large, 422 for invalid ones, 503 (for a live key) when the tool cannot run here."""
    if size > current_app._get_current_object().config["MAX_TEXT_BODY"] and not tool.binary_inputs:
        raise too_large()
    key = current_key()
    try:
        return inputs.prepare(
            tool, body, uploads, account_id=key.account_id, check_available=not key.sandbox
        )
    except inputs.InputRejected as refused:
        if refused.status == 413:
            raise Problem(413, "payload_too_large", refused.message) from None
        raise validation_failed(refused.errors) from None
    except inputs.ToolUnavailable as unavailable:
        raise _unavailable(str(unavailable)) from None


def _typed_form(tool: Tool, form: dict) -> dict:
    """Form fields arrive as strings: read JSON for the fields the tool does not type as text."""
    typed = {}
    for name, value in form.items():
        spec = tool.inputs.get("properties", {}).get(name, {})
        if spec.get("type", "string") != "string":
            # Not JSON (or JSON the body would be refused for): left as text, and validation
            # names the field.
            with contextlib.suppress(InvalidJson):
                value = parse_json(value.encode(errors="surrogatepass"), f"The field {name}")
        typed[name] = value
    return typed


def run_by_slug(slug: str, body: dict, uploads: dict[str, FileStorage]):
    tool = find_tool(slug)
    require_plan(tool.required_plan)
    stream = body.pop("stream", False)
    if request.mimetype == "multipart/form-data" and stream in ("true", "false"):
        stream = stream == "true"  # a form's field: text
    if not isinstance(stream, bool):
        raise validation_failed({"stream": ["Must be a boolean."]})
    return run_tool_request(tool, tool_inputs(tool, body, uploads), stream=stream)


def run_dispatched(body: dict, uploads: dict[str, FileStorage]):
    slug = body.pop("slug", None)
    if slug is None:
        raise validation_failed({"slug": ["Missing required field."]})
    if not isinstance(slug, str):
        raise validation_failed({"slug": ["Must be a string."]})
    return run_by_slug(slug, body, uploads)


def start_tool_run(
    tool: Tool, inputs: dict, *, queued: bool, awaited: bool, announce: bool, source: str = "api"
) -> launch.Started:
    """Start ``tool`` on checked ``inputs`` for the request's key (``jobs.launch``), admitted
    with the request's deferred per-minute hit: 429 for a quota used up, the failure's
    problem for an inline run that failed. The day's usage is noted for the answer's
    headers."""
    context = current_key()
    try:
        started = launch.start_for_key(
            context,
            tool,
            inputs,
            queued=queued,
            awaited=awaited,
            announce=announce,
            admit=admit_run,
            admit_after_run=likely_admitted(context),
            source=source,
        )
    except QuotaExceeded as refused:
        raise quota_problem(refused.reservation) from None
    except RunFailed as failed:
        raise run_problem(failed.run.id, failed.run.error) from None
    note_usage(started.reservation)
    return started


def run_tool_request(tool: Tool, inputs: dict, *, stream: bool = False):
    """Run ``tool`` for the authenticated key (``jobs.launch``): inline, or queued and waited
    for as ``Prefer`` asks. A sandbox key's run is its tool's sample, answered inline
    whatever the tool (there is no work to queue). ``stream``: the answer is the run's
    events (``events.event_stream``) once it is admitted; refusals before that stay problem
    documents."""
    prefer = parse_prefer()
    started = start_tool_run(
        tool,
        inputs,
        queued=prefer.respond_async,
        awaited=not (prefer.respond_async or stream),
        # respond-async: nobody waits, so the run's end is announced by an event. A stream
        # gives the end to its reader.
        announce=prefer.respond_async and not stream,
    )
    run = started.run
    if started.finished:
        if stream:  # it has ended: its stream is its end
            return event_stream(own_run(run.id), None, run_ending)
        return run_result(run)
    if stream:
        return event_stream(run, None, run_ending)
    finished = not prefer.respond_async and launch.wait(run.id, prefer.wait)
    db.session.refresh(run)
    if not finished:
        response = jsonify(RunRecordSchema().dump(run_record(run)))
        response.status_code = 202
        response.headers["Location"] = url_for("tools.RunStatus", run_id=run.id)
        if prefer.applied:
            response.headers["Preference-Applied"] = prefer.applied
        return response
    if run.status == "failed":
        raise run_problem(run.id, run.error)
    return run_result(run)


# The engine cannot serve (no provider configured): try again later, or once it is set.
UNAVAILABLE_RETRY_AFTER = 60


def refuse_if_unavailable(tool: Tool, step: str | None = None) -> None:
    """503 before anything is reserved or queued when the tool's engine cannot serve here
    (no provider configured, a package missing); the detail names what to set or install
    (and the workflow's ``step`` that runs the tool)."""
    reason = get_engine(tool.engine).unavailable_reason()
    if reason is not None:
        if step is not None:
            reason = f"The step {step} runs {tool.slug}, which cannot run here. {reason}"
        raise _unavailable(reason)


def _unavailable(reason: str) -> Problem:
    return Problem(
        503, "provider_unavailable", reason, headers={"Retry-After": UNAVAILABLE_RETRY_AFTER}
    )


def run_result(run: Run) -> dict:
    """The success body of a finished run."""
    return {
        "run_id": run.id,
        "tool": run.tool_slug,
        "status": run.status,
        "output": run.output,
        "credits": run.credits,
        "duration_ms": run.duration_ms,
        "sandbox": run.sandbox,
        "model": run.model,
        "quality_note": runs.quality_note(run.model),
    }


def run_record(run: Run) -> dict:
    """Everything about a run, finished or not (the status endpoint and 202 answers)."""
    return {
        **run_result(run),
        "error": run.error,
        "created_at": clock.as_utc(run.created_at),
        "started_at": clock.as_utc(run.started_at),
        "finished_at": clock.as_utc(run.finished_at),
        "status_url": absolute_url_for("tools.RunStatus", run_id=run.id),
    }


# The problem code of a failed run by its error's kind (its status: ``run_ends.FAILURE_STATUS``).
_FAILURE_CODES = {
    "input": "validation_failed",
    "provider": "provider_unavailable",
    "model_unfit": "embedded_model_unfit",
}


def run_problem(run_id: str, error: dict) -> Problem:
    """The problem document a failed run answers (and its stream's ``error`` event)."""
    kind, message = error.get("code"), error.get("message", "")
    status = run_ends.FAILURE_STATUS.get(kind, 500)
    extra: dict = {"run_id": run_id}
    if kind == "input":
        extra["errors"] = {"": [message]}
    if kind == "provider":
        extra["headers"] = {"Retry-After": error.get("retry_after") or 30}
    return Problem(status, _FAILURE_CODES.get(kind, "internal_error"), message, **extra)


def own_run(run_id) -> Run:
    """The calling account's tool run, or 404 (never 403: existence is not revealed). An
    inline run answered a moment ago may not be written yet: it is read from the recorder."""
    run = db.session.get(Run, str(run_id))
    if run is None and (row := recorder().pending(str(run_id))) is not None:
        run = Run(**row)  # as it will be stored; never added to the session
    if run is None or run.account_id != current_key().account_id or run.tool_slug is None:
        raise Problem(404, "run_not_found", f"There is no run {run_id} for this account.")
    return run


def own_events(run_id: str):
    """The events of the caller's run, from its start (a streamed run's repeated request)."""
    return event_stream(own_run(run_id), None, run_ending)


def run_ending(run: Run) -> tuple[str, dict]:
    """The last event of a run's stream: ``error`` with the problem document its failure
    answers, or ``done`` with its status record."""
    if run.status == "failed":
        return "error", problem_body(run_problem(run.id, run.error))
    return "done", RunRecordSchema().dump(run_record(run))
