"""The plan-gated endpoints (docs/architecture/plan-gated-endpoints.md), as thin facades over
tool runs.

Each endpoint is backed by a ``Tool`` that is not in the catalogue (so it has no slug on the
run endpoints): its input and output schemas, plan, credits and engine. Starting one goes
through the run endpoints' own steps (key, limits, plan, validation, files, quota, Prefer,
Idempotency-Key) and makes an ordinary run, so records, credits, sandbox samples, polling at
``/v1/tools/run/{run_id}/status`` and events behave exactly as for tool runs.
``services.runs.find_tool`` finds these tools in ``app.extensions["endpoint_tools"]``.
"""

import copy

from flask import current_app

from blueprints.api.docs import (
    API_KEY_SECURITY,
    IDEMPOTENCY_KEY_HEADER,
    PREFER_HEADER,
    RUN_LINKS,
    problem_responses,
)
from blueprints.api.pipeline import (
    authenticate,
    current_key,
    read_body,
    require_plan,
    respond_idempotently,
    validation_failed,
)
from blueprints.api.problems import Problem
from blueprints.api.tools.runs import run_tool_request, tool_inputs
from catalogue import Tool
from services.plans import upgrade_url

_ERRORS = (400, 401, 402, 403, 409, 413, 415, 422, 429, 503)


def start_run(tool: Tool, *, one_of: tuple[str, str] | None = None):
    """Run ``tool`` for the request's key, answered as the run endpoints answer.

    Free and Starter keys get 403, paid plans below the tool's 402; ``one_of`` names two
    fields of which exactly one must be sent (422 otherwise).
    """
    authenticate()
    require_api_access_for(tool)
    return respond_idempotently(lambda: _start(tool, one_of))


def _start(tool: Tool, one_of: tuple[str, str] | None):
    body, uploads = read_body(max_bytes=current_app.config["MAX_CONTENT_LENGTH"])
    require_plan(tool.required_plan)
    if "input" in body or "input" in uploads:
        # The run endpoints' alias for a tool's main field; these endpoints name their fields.
        raise validation_failed({"input": ["Unknown field."]})
    if one_of is not None:
        sent = [name for name in one_of if body.get(name) is not None or name in uploads]
        if len(sent) != 1:
            message = f"Send either {one_of[0]} or {one_of[1]} (exactly one of them)."
            raise validation_failed({name: [message] for name in one_of})
    inputs = tool_inputs(tool, body, uploads)
    return current_app.make_response(run_tool_request(tool, inputs))


def require_api_access_for(tool: Tool) -> None:
    """Free and Starter keys get 403, naming the plan that ``tool``'s endpoint needs."""
    require_api_access_for_plan(tool.required_plan)


def require_api_access_for_plan(required: str) -> None:
    """Free and Starter keys get 403, naming ``required``, the plan the endpoint needs."""
    context = current_key()
    if not context.plan.api_access:
        raise Problem(
            403,
            "plan_required",
            f"The {context.plan.name} plan has no API access beyond whoami; this endpoint "
            f"needs the {required} plan.",
            upgrade_url=upgrade_url(required),
            required_plan=required,
        )


def require_endpoint_plan(required: str) -> None:
    """The plan checks of a plan-gated endpoint that runs no tool (the embeds, the
    white-label brand): 403 for Free and Starter keys, 402 for paid plans below ``required``."""
    require_api_access_for_plan(required)
    require_plan(required)


def require_plan_of(tool: Tool) -> None:
    """The plan checks of a read-only endpoint of ``tool`` (403 Free/Starter, 402 below)."""
    require_endpoint_plan(tool.required_plan)


# --- OpenAPI ------------------------------------------------------------------------------

ACCEPTED = {
    "description": "The run is queued or running: poll `Location` (or wait for its webhook). "
    "Sent when `Prefer: respond-async` is given or the wait runs out.",
    "headers": {"Location": {"schema": {"type": "string"}, "description": "Status URL."}},
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RunRecord"}}},
    "links": RUN_LINKS,
}


def result_schema(tool: Tool) -> dict:
    """The 200 answer of ``tool``'s endpoint: a run result whose ``output`` is the tool's.

    The ``output`` schema sits beside the ``$ref`` (an OpenAPI 3.1 schema may have both, and
    validators apply both): in an ``allOf``, generators merge it with RunResult's open
    ``output`` and openapi-python-client gives up on the model. Generated clients answer a
    ``RunResult``.
    """
    return {
        "$ref": "#/components/schemas/RunResult",
        "properties": {"output": copy.deepcopy(tool.output)},
    }


def body_schema(tool: Tool) -> dict:
    """``tool``'s input schema as the body of its endpoint. A top-level ``oneOf`` of two
    ``required`` lists (``text`` or ``book``) is said in the description instead, as
    ``start_run(one_of=...)`` enforces it: generated clients typed such a body as ``Any``."""
    schema = copy.deepcopy(tool.inputs)
    choices = [f"`{alternative['required'][0]}`" for alternative in schema.pop("oneOf", [])]
    if choices:
        schema["description"] = f"Send {' or '.join(choices)}, not both."
    return schema


def run_operation(tool: Tool, *, operation_id: str, uploads: bool = False) -> dict:
    """The OpenAPI description of the POST that starts ``tool``: its body (JSON, and a form
    when files may be uploaded), Prefer and Idempotency-Key, 200 and 202 with links to the
    run's status and cancel, and every refusal."""
    schema = body_schema(tool)
    content = {"application/json": {"schema": schema, "example": tool.examples[0]["input"]}}
    if uploads:
        form = "The same fields as a form; a file field may be an upload. Fields that are not "
        form += "text are sent as JSON."
        if "description" in schema:
            form = f"{schema['description']} {form}"
        content["multipart/form-data"] = {"schema": {**schema, "description": form}}
    return {
        "operationId": operation_id,
        "security": API_KEY_SECURITY,
        "parameters": [PREFER_HEADER, IDEMPOTENCY_KEY_HEADER],
        "requestBody": {"required": True, "content": content},
        "responses": {
            # Keyed as flask-smorest keys the documented 200, so the links join it.
            200: {"links": RUN_LINKS},
            "202": ACCEPTED,
            **problem_responses(*_ERRORS),
        },
    }
