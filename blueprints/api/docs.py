"""Helpers that document an operation's security and its real error responses."""

from http import HTTPStatus
from typing import Any, NamedTuple

from blueprints.api.problems import PROBLEM_JSON
from catalogue import Tool
from services.runs import credits_for

API_KEY_SECURITY = [{"ApiKeyHeader": []}, {"BearerKey": []}]
PUBLIC = []

# Why each status happens, for the OpenAPI description of the response.
_REASONS = {
    400: "The body is not parseable JSON [invalid_json].",
    401: "Missing, malformed, unknown, revoked or expired API key [invalid_api_key].",
    402: "The plan does not include this; `upgrade_url` and `required_plan` say what to buy "
    "[plan_required].",
    403: "Free and Starter keys can only call whoami [plan_required].",
    404: "Unknown tool, workflow or run [tool_not_found, run_not_found].",
    409: "The run has already ended [run_not_cancelable], or a request with the same "
    "Idempotency-Key is still in flight.",
    413: "The body is larger than 1 MiB (25 MiB with files) [payload_too_large].",
    415: "The body is not JSON [unsupported_media_type].",
    422: "Wrong types, a missing required field or an unknown field; `errors` lists them per "
    "field [validation_failed].",
    429: "Per-minute rate limit [rate_limited] or daily quota [quota_exceeded] exhausted; "
    "`Retry-After` says when to try again.",
    503: "Every provider for the capability is unreachable [provider_unavailable], or Redis "
    "or the database is [service_unavailable]; transient, see `Retry-After`. Or the embedded "
    "model's answers failed the tool's checks [embedded_model_unfit].",
}

RATE_LIMIT_HEADERS = {
    "RateLimit-Policy": {
        "description": 'Policies in force, e.g. `"minute";q=200;w=60, "day";q=1000;w=86400`.',
        "schema": {"type": "string"},
    },
    "RateLimit": {
        "description": 'What is left, e.g. `"minute";r=199;t=42, "day";r=950;t=3600`.',
        "schema": {"type": "string"},
    },
    "X-RateLimit-Limit": {"description": "Per-minute limit.", "schema": {"type": "integer"}},
    "X-RateLimit-Remaining": {
        "description": "Requests left in this minute.",
        "schema": {"type": "integer"},
    },
    "X-RateLimit-Reset": {
        "description": "Unix time (seconds) at which the minute window resets.",
        "schema": {"type": "integer"},
    },
}
REQUEST_ID_HEADER = {
    "X-Request-Id": {"description": "Identifies this request.", "schema": {"type": "string"}}
}


def problem_responses(*statuses: int) -> dict:
    """OpenAPI ``responses`` entries for the given error statuses. An operation that takes a
    key (401) may always answer 503: the key's limits live in Redis."""
    if 401 in statuses and 503 not in statuses:
        statuses = (*statuses, 503)
    responses = {}
    for status in statuses:
        headers = dict(REQUEST_ID_HEADER)
        if status in (429, 503):
            headers["Retry-After"] = {
                "description": "Seconds to wait before trying again.",
                "schema": {"type": "integer"},
            }
        responses[str(status)] = {
            "description": _REASONS.get(status, HTTPStatus(status).phrase),
            "headers": headers,
            "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
    return responses


PREFER_HEADER = {
    "in": "header",
    "name": "Prefer",
    "required": False,
    "description": "`wait=N` waits up to N seconds (default 25, at most 60) for a queued run "
    "before answering 202; `respond-async` answers 202 at once (even for a light tool).",
    "schema": {"type": "string", "example": "wait=10"},
}

IDEMPOTENCY_KEY_HEADER = {
    "in": "header",
    "name": "Idempotency-Key",
    "required": False,
    "description": "Makes the POST safe to retry for 24 hours: the same key on the same "
    "request replays the first answer (`Idempotent-Replayed: true`); on a different request "
    "it is a 422 [idempotency_key_reused]; while the first is in flight, a 409.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255},
}


def _run_links(status_operation: str, cancel_operation: str) -> dict:
    """OpenAPI links from an answer that carries a run's ``run_id`` to the operations that
    follow that run, by operationId (generated clients and schemathesis read them)."""
    run_id = {"run_id": "$response.body#/run_id"}
    return {
        "status": {
            "operationId": status_operation,
            "parameters": run_id,
            "description": "The run's record: poll it until `status` is `succeeded`, `failed` "
            "or `canceled`.",
        },
        "cancel": {
            "operationId": cancel_operation,
            "parameters": run_id,
            "description": "Cancel the run while it is queued or running.",
        },
    }


RUN_LINKS = _run_links("getRunStatus", "cancelRun")
WORKFLOW_RUN_LINKS = _run_links("getWorkflowRunStatus", "cancelWorkflowRun")


# The run endpoints' ``stream`` flag (blueprints/api/tools/routes.py, ``run_by_slug``).
STREAM_FIELD = {
    "type": "boolean",
    "default": False,
    "description": "Answer `200` with the run's events as server-sent events "
    "(`text/event-stream`: `delta` pieces of the text as the model writes it, then `done` "
    "with the status record or `error` with a problem document) instead of JSON. Refusals "
    "before the run starts are problem documents as usual.",
}


def result_example(tool: Tool) -> dict:
    """A finished run's answer for ``tool``, as its endpoint's example."""
    return {
        "run_id": "0b8f6c1e-4f3a-4c7e-9a51-2d5e8f7a9c10",
        "tool": tool.slug,
        "status": "succeeded",
        "output": tool.sample_output(),
        "credits": credits_for(tool, tool.sample_output()),
        "duration_ms": 8421,
        "sandbox": False,
        "model": None,
        "quality_note": None,
    }


class SavedExample(NamedTuple):
    """One saved request of an `example_folder`: its name, JSON body and, when given, the
    JSON body of its saved 200 response."""

    name: str
    body: Any
    description: str = ""
    response: Any = None
