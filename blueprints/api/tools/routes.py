from flask import request
from flask.views import MethodView
from flask_smorest import Blueprint

from blueprints.api.docs import (
    API_KEY_SECURITY,
    IDEMPOTENCY_KEY_HEADER,
    PREFER_HEADER,
    PUBLIC,
    RUN_LINKS,
    STREAM_FIELD,
    problem_responses,
)
from blueprints.api.events import LAST_EVENT_ID, RUN_EVENTS_RESPONSE, event_stream
from blueprints.api.pipeline import (
    authenticate,
    cancel_or_409,
    require_api_access,
    respond_idempotently,
)
from blueprints.api.schemas import RunRecordSchema, RunResultSchema
from blueprints.api.tools.runs import (
    find_tool,
    own_events,
    own_run,
    run_body,
    run_by_slug,
    run_dispatched,
    run_ending,
    run_record,
)
from blueprints.api.tools.schemas import (
    SEARCH_LIMIT,
    ToolListSchema,
    ToolQuerySchema,
    ToolSchema,
)
from catalogue import load_catalogue
from services import run_ends
from services.assistant.search import search_tools

blp = Blueprint("tools", __name__, url_prefix="/v1", description="Run tools; browse the catalogue.")

_RUN_ERRORS = (400, 401, 402, 403, 404, 409, 413, 415, 422, 429, 503)
_ACCEPTED = {
    "description": "The run is queued or running: poll `Location` (or wait for its "
    "webhook). Sent when `Prefer: respond-async` is given or the wait runs out.",
    "headers": {"Location": {"schema": {"type": "string"}, "description": "Status URL."}},
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RunRecord"}}},
    "links": RUN_LINKS,
}


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
        cancel_or_409(run, run_ends.cancel)
        return run_record(run)
