from flask import current_app, jsonify, request, url_for
from flask.views import MethodView
from flask_smorest import Blueprint

from blueprints.api.docs import (
    API_KEY_SECURITY,
    IDEMPOTENCY_KEY_HEADER,
    PUBLIC,
    WORKFLOW_RUN_LINKS,
    problem_responses,
)
from blueprints.api.events import LAST_EVENT_ID, event_stream, events_response
from blueprints.api.pipeline import (
    authenticate,
    cancel_or_409,
    read_body,
    require_api_access,
    respond_idempotently,
    validation_failed,
)
from blueprints.api.workflows.runs import (
    find_workflow,
    own_workflow_run,
    run_record,
    start_workflow_run,
    workflow_run_ending,
)
from blueprints.api.workflows.schemas import (
    WorkflowListSchema,
    WorkflowRunAcceptedSchema,
    WorkflowRunRecordSchema,
    WorkflowRunRequestSchema,
    WorkflowSchema,
)
from services import clock, workflows
from services.urls import absolute_url_for

blp = Blueprint(
    "workflows",
    __name__,
    url_prefix="/v1",
    description="Run multi-step workflows of tools; browse them.",
)

_FIELDS = {"workflow_id", "input"}
_ACCEPTED = {
    "description": "The run has started: poll `Location` (or wait for its "
    "`workflow.completed` / `workflow.failed` webhook).",
    "headers": {"Location": {"schema": {"type": "string"}, "description": "Status URL."}},
    "content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/WorkflowRunAccepted"}}
    },
    "links": WORKFLOW_RUN_LINKS,
}


def start_run():
    """Start a run for the authenticated key: 202 with its status URL."""
    body, uploads = read_body(max_bytes=current_app.config["MAX_CONTENT_LENGTH"])
    if uploads:
        raise validation_failed({name: ["This endpoint takes no files."] for name in uploads})
    workflow_id = body.get("workflow_id")
    if not isinstance(workflow_id, str):
        message = "Missing required field." if workflow_id is None else "Must be a string."
        raise validation_failed({"workflow_id": [message]})
    workflow = find_workflow(workflow_id)
    unknown = {name: ["Unknown field."] for name in body if name not in _FIELDS}
    if "input" not in body:
        unknown["input"] = ["Missing required field."]
    run = start_workflow_run(
        workflow, body.get("input"), request.content_length or 0, errors=unknown
    )
    accepted = {
        "run_id": run.id,
        "workflow_id": run.workflow_id,
        "status": run.status,
        "status_url": absolute_url_for("workflows.WorkflowRunStatus", run_id=run.id),
        "created_at": clock.as_utc(run.created_at),
    }
    response = jsonify(WorkflowRunAcceptedSchema().dump(accepted))
    response.status_code = 202
    response.headers["Location"] = url_for("workflows.WorkflowRunStatus", run_id=run.id)
    return response


@blp.route("/workflows")
class Workflows(MethodView):
    @blp.response(200, WorkflowListSchema)
    @blp.doc(operationId="listWorkflows", security=PUBLIC)
    def get(self):
        """List the workflows: their steps, input and output schemas, plan and credits."""
        found = [workflow.to_public() for workflow in current_app.extensions["workflows"]]
        return {"workflows": found, "count": len(found)}


@blp.route("/workflows/<slug:workflow_id>")
class WorkflowById(MethodView):
    @blp.response(200, WorkflowSchema)
    @blp.doc(operationId="getWorkflow", security=PUBLIC, responses=problem_responses(404))
    def get(self, workflow_id):
        """One workflow: its steps, input and output schemas, plan and credits."""
        return find_workflow(workflow_id).to_public()


@blp.route("/workflows/run")
class WorkflowRunStart(MethodView):
    @blp.alt_response(202, schema=WorkflowRunAcceptedSchema, success=True)
    @blp.doc(
        operationId="startWorkflow",
        security=API_KEY_SECURITY,
        parameters=[IDEMPOTENCY_KEY_HEADER],
        requestBody={
            "required": True,
            "content": {
                "application/json": {
                    "schema": WorkflowRunRequestSchema,
                    "example": {
                        "workflow_id": "content-creator",
                        "input": "How to start composting in a small apartment",
                    },
                }
            },
        },
        responses={
            "202": _ACCEPTED,
            **problem_responses(400, 401, 402, 403, 404, 409, 413, 415, 422, 429, 503),
        },
    )
    def post(self):
        """Start a workflow run (202 with its `run_id`; 403 for Free/Starter keys)."""
        authenticate(defer_limit=True)
        require_api_access()
        return respond_idempotently(start_run)


@blp.route("/workflows/run/<uuid:run_id>/status")
class WorkflowRunStatus(MethodView):
    @blp.response(200, WorkflowRunRecordSchema)
    @blp.doc(
        operationId="getWorkflowRunStatus",
        security=API_KEY_SECURITY,
        responses=problem_responses(401, 404, 429),
    )
    def get(self, run_id):
        """A workflow run's status, progress, steps, and its output or error once it has ended."""
        authenticate()
        return run_record(own_workflow_run(run_id))


WORKFLOW_EVENTS_RESPONSE = events_response(
    "The workflow run's events as server-sent events (`text/event-stream`), each with an "
    '`id:`: `step_started` and `step_ended` (`{"step", "tool", "run_id"}`, and the step\'s '
    '`status` at its end), `delta` (`{"step", "text"}`, a piece of the text a step\'s model '
    "writes), then `done` (the status record, as `GET /v1/workflows/run/{run_id}/status` "
    "answers it) or `error` (the problem document of the run's failure, naming its `step`), "
    "after which the stream ends. Comment lines keep an idle stream alive.",
    ("step_started", "delta", "reset", "step_ended", "done", "error"),
)


@blp.route("/workflows/run/<uuid:run_id>/events")
class WorkflowRunEvents(MethodView):
    @blp.doc(
        operationId="streamWorkflowRunEvents",
        security=API_KEY_SECURITY,
        parameters=[LAST_EVENT_ID],
        responses={"200": WORKFLOW_EVENTS_RESPONSE, **problem_responses(401, 404, 429)},
    )
    def get(self, run_id):
        """A workflow run's events as server-sent events: each step's start, the text its
        model writes and its end, then `done` (the run's status record) or `error`."""
        authenticate()
        run = own_workflow_run(run_id)
        return event_stream(run, request.headers.get("Last-Event-ID"), workflow_run_ending)


@blp.route("/workflows/run/<uuid:run_id>/cancel")
class WorkflowRunCancel(MethodView):
    @blp.response(200, WorkflowRunRecordSchema)
    @blp.doc(
        operationId="cancelWorkflowRun",
        security=API_KEY_SECURITY,
        responses=problem_responses(401, 404, 409, 429),
    )
    def post(self, run_id):
        """Cancel a workflow run: no further step starts; unfinished steps' quota is released."""
        authenticate()
        run = own_workflow_run(run_id)
        cancel_or_409(run, workflows.cancel)
        return run_record(run)
