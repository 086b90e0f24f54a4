import contextlib

from flask import current_app, jsonify, request, url_for
from flask.views import MethodView
from flask_smorest import Blueprint
from werkzeug.datastructures import FileStorage

from blueprints.api.docs import (
    API_KEY_SECURITY,
    IDEMPOTENCY_KEY_HEADER,
    PREFER_HEADER,
    PUBLIC,
    RUN_LINKS,
    STREAM_FIELD,
    problem_responses,
)
from blueprints.api.pipeline import (
    InvalidJson,
    admit_run,
    authenticate,
    cancel_or_409,
    current_key,
    likely_admitted,
    note_usage,
    parse_json,
    parse_prefer,
    quota_problem,
    read_body,
    require_api_access,
    require_plan,
    respond_idempotently,
    too_large,
    validation_failed,
)
from blueprints.api.problems import Problem, problem_body
from blueprints.api.schemas import RunRecordSchema, RunResultSchema
from blueprints.api.tools.events import LAST_EVENT_ID, RUN_EVENTS_RESPONSE, event_stream
from blueprints.api.tools.schemas import (
    SEARCH_LIMIT,
    ToolListSchema,
    ToolQuerySchema,
    ToolSchema,
)
from catalogue import Tool, load_catalogue
from engines import get_engine
from extensions import db
from jobs.runs import enqueue_run
from models import Run
from services import clock, inputs, runs
from services.assistant.search import search_tools
from services.queue import dispatcher
from services.recorder import recorder
from services.runs import QuotaExceeded, RunFailed
from services.urls import absolute_url_for

blp = Blueprint("tools", __name__, url_prefix="/v1", description="Run tools; browse the catalogue.")

_RUN_ERRORS = (400, 401, 402, 403, 404, 409, 413, 415, 422, 429, 503)
_ACCEPTED = {
    "description": "The run is queued or running: poll `Location` (or wait for its "
    "webhook). Sent when `Prefer: respond-async` is given or the wait runs out.",
    "headers": {"Location": {"schema": {"type": "string"}, "description": "Status URL."}},
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RunRecord"}}},
    "links": RUN_LINKS,
}


def run_body() -> tuple[dict, dict[str, FileStorage]]:
    """A run's body: JSON or multipart, up to the file limit (text tools check 1 MiB later)."""
    return read_body(max_bytes=current_app._get_current_object().config["MAX_CONTENT_LENGTH"])


def find_tool(slug: str) -> Tool:
    tool = load_catalogue().get(slug)
    if tool is None:
        raise Problem(404, "tool_not_found", f"There is no tool with the slug {slug!r}.")
    return tool


def tool_inputs(tool: Tool, body: dict, uploads: dict[str, FileStorage]) -> dict:
    """The tool's inputs from the body (services/inputs.py), form values typed first: 422
    for invalid ones, 413 for a file too large, 503 (for a live key) when the tool cannot
    run here."""
    # One proxy lookup each (blueprints/api/pipeline/keys.py says why).
    this_request = request._get_current_object()
    config = current_app._get_current_object().config
    if (this_request.content_length or 0) > config["MAX_TEXT_BODY"] and not tool.binary_inputs:
        raise too_large()
    if this_request.mimetype == "multipart/form-data":
        body = _typed_form(tool, body)
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


def run_tool_request(tool: Tool, inputs: dict, *, stream: bool = False):
    """Run ``tool`` for the authenticated key: inline, or queued and waited for (Prefer).
    A sandbox key's run is its tool's sample, answered inline whatever the tool (there is
    no work to queue). ``stream``: the answer is the run's events (``events.event_stream``)
    once it is admitted; refusals before that stay problem documents."""
    prefer = parse_prefer()
    sandbox = current_key().sandbox
    try:
        if sandbox or (not tool.queue and not prefer.respond_async):
            body = _inline(tool, inputs)
            if stream:  # it has ended: its stream is its end
                return event_stream(own_run(body["run_id"]), None, run_ending)
            return body
        # respond-async: nobody waits, so the run's end is announced by an event. A stream
        # gives the end to its reader.
        notify = prefer.respond_async and not stream
        result = runs.submit(current_key(), tool, inputs, notify=notify, admit=admit_run)
    except QuotaExceeded as refused:
        raise quota_problem(refused.reservation) from None
    note_usage(result.reservation)
    run_id = result.run.id
    runs.commit_submission(result.held)
    enqueue_run(run_id, tool, awaited=not (prefer.respond_async or stream))
    if stream:
        return event_stream(db.session.get(Run, run_id), None, run_ending)
    finished = False
    if not prefer.respond_async:
        finished = dispatcher().wait(run_id, prefer.wait) or not runs.mark_waiter_gone(run_id)
        db.session.commit()
    run = db.session.get(Run, run_id)
    db.session.refresh(run)
    if not finished:
        response = jsonify(RunRecordSchema().dump(run_record(run)))
        response.status_code = 202
        response.headers["Location"] = url_for("tools.RunStatus", run_id=run_id)
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


def _inline(tool: Tool, inputs: dict) -> dict:
    try:
        context = current_key()
        result = runs.run_inline(
            context, tool, inputs, admit=admit_run, admit_after_run=likely_admitted(context)
        )
    except RunFailed as failed:
        db.session.commit()
        raise run_problem(failed.run.id, failed.run.error) from None
    body = run_result(result.run)
    runs.end_transaction()  # the claim of a free call, if one was made
    note_usage(result.reservation)
    return body


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


# The problem code of a failed run by its error's kind (its status: ``runs.FAILURE_STATUS``).
_FAILURE_CODES = {
    "input": "validation_failed",
    "provider": "provider_unavailable",
    "model_unfit": "embedded_model_unfit",
}


def run_problem(run_id: str, error: dict) -> Problem:
    """The problem document a failed run answers (and its stream's ``error`` event)."""
    kind, message = error.get("code"), error.get("message", "")
    status = runs.FAILURE_STATUS.get(kind, 500)
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


@blp.route("/tools")
class Tools(MethodView):
    @blp.arguments(ToolQuerySchema, location="query")
    @blp.response(200, ToolListSchema)
    @blp.doc(operationId="listTools", security=PUBLIC, responses=problem_responses(422))
    def get(self, query):
        """List the tool catalogue, optionally by category or by what a plan can run, or
        search it (``q``)."""
        text = query.pop("q", None)
        found = load_catalogue().filter(**query)
        if text is not None:
            found = search_tools(text, found, limit=SEARCH_LIMIT)
        tools = [tool.to_public() for tool in found]
        return {"tools": tools, "count": len(tools)}


@blp.route("/tools/<slug:slug>")
class ToolBySlug(MethodView):
    @blp.response(200, ToolSchema)
    @blp.doc(operationId="getTool", security=PUBLIC, responses=problem_responses(404))
    def get(self, slug):
        """One tool: its input and output schemas, plan, credits and availability."""
        return find_tool(slug).to_public()


def _run_operation(body_schema: dict, example: dict, *, operation_id: str) -> dict:
    """The OpenAPI description shared by both run endpoints."""
    return {
        "operationId": operation_id,
        "security": API_KEY_SECURITY,
        "parameters": [PREFER_HEADER, IDEMPOTENCY_KEY_HEADER],
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": body_schema, "example": example},
                "multipart/form-data": {
                    "schema": {
                        **body_schema,
                        "description": "The same fields as a form; a file field may be an "
                        "upload. Fields that are not text are sent as JSON.",
                    }
                },
            },
        },
        "responses": {
            # Keyed as flask-smorest keys the documented 200, so the links and the streamed
            # answer join it.
            200: {"links": RUN_LINKS, "content": RUN_EVENTS_RESPONSE["content"]},
            "202": _ACCEPTED,
            **problem_responses(*_RUN_ERRORS),
        },
    }


# The run endpoints answer the dict run_result builds, as it is: the schema documents it
# (and schemathesis checks answers against it) without a marshmallow pass on the hot path.
@blp.route("/public/tools/<slug:slug>/run")
class RunBySlug(MethodView):
    @blp.alt_response(200, schema=RunResultSchema, success=True)
    @blp.doc(
        **_run_operation(
            {
                "type": "object",
                "required": ["input"],
                "properties": {
                    "input": {
                        "type": "string",
                        "description": "The tool's main input (its primary field).",
                    },
                    "stream": STREAM_FIELD,
                },
                "additionalProperties": True,
            },
            {"input": "Flask is a lightweight web framework for Python."},
            operation_id="runToolBySlug",
        )
    )
    def post(self, slug):
        """Run a tool by slug with `{"input": "..."}` (402 below Pro)."""
        authenticate(defer_limit=True)
        require_api_access(on_slug_endpoint=True)
        return respond_idempotently(lambda: run_by_slug(slug, *run_body()), events=own_events)


@blp.route("/tools/run")
class RunDispatch(MethodView):
    @blp.alt_response(200, schema=RunResultSchema, success=True)
    @blp.doc(
        # The body is refined per tool by blueprints/api/tools/openapi.py.
        **_run_operation(
            {
                "type": "object",
                "required": ["slug"],
                "properties": {
                    "slug": {"type": "string", "description": "The tool to run."},
                    "input": {
                        "type": "string",
                        "description": "Alias for the tool's primary field.",
                    },
                    "stream": STREAM_FIELD,
                },
                "additionalProperties": True,
            },
            {"slug": "keyword-extractor", "input": "Flask web framework"},
            operation_id="runTool",
        )
    )
    def post(self):
        """Run any tool: `slug` plus the tool's own fields (403 for Free/Starter keys)."""
        authenticate(defer_limit=True)
        require_api_access()
        return respond_idempotently(lambda: run_dispatched(*run_body()), events=own_events)


@blp.route("/tools/run/<uuid:run_id>/status")
class RunStatus(MethodView):
    @blp.response(200, RunRecordSchema)
    @blp.doc(
        operationId="getRunStatus",
        security=API_KEY_SECURITY,
        responses=problem_responses(401, 404, 429),
    )
    def get(self, run_id):
        """A tool run's status, and its output or error once it has ended."""
        authenticate()
        return run_record(own_run(run_id))


@blp.route("/tools/run/<uuid:run_id>/events")
class RunEvents(MethodView):
    @blp.doc(
        operationId="streamRunEvents",
        security=API_KEY_SECURITY,
        parameters=[LAST_EVENT_ID],
        responses={"200": RUN_EVENTS_RESPONSE, **problem_responses(401, 404, 429)},
    )
    def get(self, run_id):
        """A tool run's events as server-sent events: the text its model writes (`delta`),
        then `done` (its status record) or `error` (its problem document)."""
        authenticate()
        return event_stream(own_run(run_id), request.headers.get("Last-Event-ID"), run_ending)


def own_events(run_id: str):
    """The events of the caller's run, from its start (a streamed run's repeated request)."""
    return event_stream(own_run(run_id), None, run_ending)


def run_ending(run: Run) -> tuple[str, dict]:
    """The last event of a run's stream: ``error`` with the problem document its failure
    answers, or ``done`` with its status record."""
    if run.status == "failed":
        return "error", problem_body(run_problem(run.id, run.error))
    return "done", RunRecordSchema().dump(run_record(run))


@blp.route("/tools/run/<uuid:run_id>/cancel")
class RunCancel(MethodView):
    @blp.response(200, RunRecordSchema)
    @blp.doc(
        operationId="cancelRun",
        security=API_KEY_SECURITY,
        responses=problem_responses(401, 404, 409, 429),
    )
    def post(self, run_id):
        """Cancel a queued or running tool run (409 once it has ended); its quota is released."""
        authenticate()
        run = own_run(run_id)
        cancel_or_409(run, runs.cancel)
        return run_record(run)
