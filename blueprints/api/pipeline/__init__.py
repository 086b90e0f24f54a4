"""The request pipeline (docs/architecture/request-pipeline.md), in its order.

body size (413) → key (401) → per-minute limit (429) → plan has API access (402/403) →
body parses (400) → ... → quota (429, in services/runs.py). Each step raises a Problem.

One module per concern: ``keys`` (the key and its limits), ``bodies`` (request bodies and
JSON text), ``prefer`` (the ``Prefer`` header), ``runs`` (usage noted, quota refused,
cancel), ``headers`` (the rate-limit headers) and ``idempotent`` (``Idempotency-Key``). The
views import what they use from here.
"""

from blueprints.api.pipeline.bodies import (
    MAX_JSON_DEPTH,
    InvalidJson,
    json_body,
    parse_json,
    read_body,
    too_large,
    validation_failed,
)
from blueprints.api.pipeline.headers import rate_limit_headers
from blueprints.api.pipeline.idempotent import IDEMPOTENCY_HEADER, respond_idempotently
from blueprints.api.pipeline.keys import (
    API_KEY_HEADER,
    admit_run,
    authenticate,
    current_key,
    likely_admitted,
    raw_key_from_request,
    require_api_access,
    require_plan,
    settle_limit,
)
from blueprints.api.pipeline.prefer import DEFAULT_WAIT, MAX_WAIT, Prefer, parse_prefer
from blueprints.api.pipeline.runs import cancel_or_409, note_usage, quota_problem

__all__ = [
    "API_KEY_HEADER",
    "DEFAULT_WAIT",
    "IDEMPOTENCY_HEADER",
    "MAX_JSON_DEPTH",
    "MAX_WAIT",
    "InvalidJson",
    "Prefer",
    "admit_run",
    "authenticate",
    "cancel_or_409",
    "current_key",
    "json_body",
    "likely_admitted",
    "note_usage",
    "parse_json",
    "parse_prefer",
    "quota_problem",
    "rate_limit_headers",
    "raw_key_from_request",
    "read_body",
    "require_api_access",
    "require_plan",
    "respond_idempotently",
    "settle_limit",
    "too_large",
    "validation_failed",
]
