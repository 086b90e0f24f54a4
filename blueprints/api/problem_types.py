"""Every problem ``code`` the API answers, explained: the pages at ``/docs/problems/<code>``
that each problem's ``type`` URI names (RFC 9457: a type URI should lead to documentation a
person can read). A test checks that every code the code base raises is here."""

from dataclasses import dataclass
from http import HTTPStatus


@dataclass(frozen=True)
class ProblemType:
    code: str
    statuses: tuple[int, ...]
    title: str
    meaning: str
    remedy: str

    @property
    def slug(self) -> str:
        """The last segment of its type URI (``-`` for ``_``)."""
        return self.code.replace("_", "-")

    @property
    def reason(self) -> str:
        """The ``title`` of its answers: the HTTP reason phrase of its (first) status."""
        return HTTPStatus(self.statuses[0]).phrase


_TYPES = (
    ProblemType(
        "bad_request", (400,), "Bad request",
        "The request could not be read as HTTP this endpoint understands (a malformed header "
        "or query, say).",
        "Check the request against the API reference; the detail names what was wrong.",
    ),
    ProblemType(
        "invalid_json", (400,), "The body is not JSON the API reads",
        "The body is not parseable JSON, or not JSON the API accepts: not UTF-8, a NaN or "
        "Infinity literal, a number beyond a double, an unpaired surrogate escape such as "
        '"\\ud800", or nesting deeper than 128 levels.',
        "Send a UTF-8 JSON document with Content-Type: application/json; encode special "
        "numbers as strings and keep nesting shallow.",
    ),
    ProblemType(
        "invalid_api_key", (401,), "Missing or invalid API key",
        "The request carries no API key, or one that is malformed, unknown, revoked or "
        "expired (or whose account is suspended).",
        "Send your key in the X-SVC-API-Key header (or Authorization: Bearer <key>). A lost "
        "or revoked key cannot be recovered: create a new one in your account.",
    ),
    ProblemType(
        "plan_required", (402, 403), "Your plan does not include this",
        "402: the endpoint or tool needs a higher plan than the key's account has "
        "(required_plan says which; upgrade_url leads to it). 403: Free and Starter keys may "
        "call whoami only.",
        "Upgrade at upgrade_url, or use a tool your plan includes (GET /v1/tools lists each "
        "tool's required_plan).",
    ),
    ProblemType(
        "forbidden", (403,), "Refused before it was read",
        "The server refused the connection's request before reading it: a TLS handshake "
        "that failed, or a PROXY protocol line from an address it does not trust.",
        "Connect through the service's public address (its router or proxy), over TLS where "
        "it asks for it.",
    ),
    ProblemType(
        "not_found", (404,), "No such endpoint",
        "There is no API endpoint at this path.",
        "Check the path against the API reference (every path starts with /v1).",
    ),
    ProblemType(
        "tool_not_found", (404,), "No such tool",
        "No tool has this slug.",
        "List the tools with GET /v1/tools (filter with ?category= or ?q=).",
    ),
    ProblemType(
        "workflow_not_found", (404,), "No such workflow",
        "No workflow has this id.",
        "List the workflows with GET /v1/workflows.",
    ),
    ProblemType(
        "run_not_found", (404,), "No such run",
        "There is no run with this id for your account (another account's runs are not "
        "found either: their existence is not revealed).",
        "Use the run_id (or status_url) the run's start answered, with a key of the same "
        "account.",
    ),
    ProblemType(
        "file_not_found", (404,), "No such file",
        "There is no stored file with this id.",
        "Use the url a run's output gave for the file.",
    ),
    ProblemType(
        "delivery_not_found", (404,), "No such webhook delivery",
        "There is no webhook delivery with this id for this key.",
        "List the key's deliveries with GET /v1/webhook/deliveries.",
    ),
    ProblemType(
        "embed_not_found", (404,), "No such widget",
        "There is no embeddable widget with this id for your account (another account's "
        "widgets are not found either).",
        "List your account's widgets with GET /v1/embeds.",
    ),
    ProblemType(
        "method_not_allowed", (405,), "Method not allowed",
        "The endpoint exists but does not take this HTTP method; the Allow header lists "
        "those it takes.",
        "Use one of the methods in the Allow header.",
    ),
    ProblemType(
        "not_acceptable", (406,), "Not acceptable",
        "The endpoint cannot answer in any media type the Accept header allows.",
        "Accept application/json (and application/problem+json for errors).",
    ),
    ProblemType(
        "request_timeout", (408,), "The request did not arrive in time",
        "The request's headers and body did not all arrive within the server's bound "
        "(20 seconds by default) after its first byte; the connection was closed.",
        "Send the whole request at once; for large files, check the client's upload speed "
        "or send a URL the service can fetch instead.",
    ),
    ProblemType(
        "run_not_cancelable", (409,), "The run has already ended",
        "Only queued or running runs can be canceled; this one has succeeded, failed or "
        "been canceled.",
        "Read its result at its status URL.",
    ),
    ProblemType(
        "step_canceled", (409,), "A step of the workflow run was canceled",
        "A step of the workflow run was canceled (its tool run canceled on its own), so the "
        "workflow run failed: the steps after it did not run. It is the last event of the "
        "run's event stream; the problem names the `step`.",
        "Start the workflow run again; read the steps that succeeded at its status URL.",
    ),
    ProblemType(
        "idempotency_in_flight", (409,), "The same request is still being carried out",
        "Another request with the same Idempotency-Key is in progress.",
        "Wait for it to finish, then repeat the request with the same key to get its answer.",
    ),
    ProblemType(
        "webhook_not_set", (409,), "The key has no webhook",
        "The action needs a webhook URL on the key, and none is set.",
        "Set the key's webhook URL first.",
    ),
    ProblemType(
        "webhook_disabled", (409,), "The key's webhook is disabled",
        "The webhook was disabled (its endpoint answered 410 Gone, or failed for too long).",
        "Fix the endpoint and set the webhook URL again, which enables it.",
    ),
    ProblemType(
        "delivery_in_progress", (409,), "A delivery attempt is under way",
        "An attempt of this webhook delivery is being made right now.",
        "Wait a moment and read the delivery again before resending it.",
    ),
    ProblemType(
        "file_gone", (410,), "The file is gone",
        "The file existed but has been deleted from storage.",
        "Run the tool again to make a new file.",
    ),
    ProblemType(
        "endpoint_sunset", (410,), "The endpoint has been retired",
        "The endpoint was deprecated and its sunset date has passed, so it no longer does "
        "anything; replacement names the endpoint that took its place, and the changelog "
        "entry (linked from changelog) says what changed.",
        "Move to the replacement endpoint. Deprecated endpoints announce their sunset at "
        "least six months ahead in Deprecation and Sunset headers and at /api/changelog/.",
    ),
    ProblemType(
        "payload_too_large", (413,), "The body is too large",
        "The body is over what the endpoint accepts: 1 MiB for JSON text, 25 MiB for "
        "requests carrying files.",
        "Send less text per request, or send a large file as a URL the service fetches.",
    ),
    ProblemType(
        "uri_too_long", (414,), "The request line is too long",
        "The request line (method, path and query string) is longer than the server reads: "
        "4,094 bytes.",
        "Send long values in a JSON body (POST) rather than in the path or the query string.",
    ),
    ProblemType(
        "unsupported_media_type", (415,), "Unsupported body type",
        "The body is neither JSON nor a multipart form, or it is compressed "
        "(a Content-Encoding such as gzip, which the API does not decode).",
        "Send Content-Type: application/json, or multipart/form-data for file uploads, "
        "uncompressed.",
    ),
    ProblemType(
        "expectation_failed", (417,), "Unsupported Expect header",
        "The request's Expect header asks for something other than 100-continue, the only "
        "expectation the server meets.",
        "Send Expect: 100-continue, or no Expect header.",
    ),
    ProblemType(
        "validation_failed", (422,), "Invalid input",
        "Fields have the wrong type, are missing or are unknown, or the tool refused the "
        "input; errors maps each field to its messages.",
        "Fix the fields errors names; each tool's input schema is in GET /v1/tools/{slug}. "
        "Send either input or the tool's main field, not both.",
    ),
    ProblemType(
        "idempotency_key_reused", (422,), "Idempotency-Key reused on another request",
        "This Idempotency-Key was already used with a different request body or endpoint.",
        "Use a new key for each distinct request; reuse a key only to repeat the same one.",
    ),
    ProblemType(
        "rate_limited", (429,), "Too many requests this minute",
        "The key has spent its requests for the current minute (limit, remaining and "
        "resets_at say so).",
        "Wait Retry-After seconds; spread requests out, or move to a plan with a higher "
        "per-minute limit.",
    ),
    ProblemType(
        "quota_exceeded", (429,), "Daily quota used up",
        "The key has used all of today's calls (UTC); the quota resets at 00:00 UTC.",
        "Wait until resets_at, or upgrade to a plan with a larger daily quota.",
    ),
    ProblemType(
        "request_headers_too_large", (431,), "The headers are too large",
        "A header is longer than the server reads (8,190 bytes), or the request has more "
        "than 100 headers.",
        "Send fewer or shorter headers (a large cookie, say); send data in the body instead.",
    ),
    ProblemType(
        "internal_error", (500,), "Something went wrong on our side",
        "An unexpected error; nothing was charged for a run that failed this way.",
        "Retry later; if it persists, report it with the request_id.",
    ),
    ProblemType(
        "transfer_coding_not_supported", (501,), "Unsupported transfer coding",
        "The body was sent with a Transfer-Encoding other than chunked (gzip, say), which "
        "the server does not read.",
        "Send the body with a Content-Length, or with Transfer-Encoding: chunked alone.",
    ),
    ProblemType(
        "provider_unavailable", (503,), "The capability cannot be served right now",
        "The tool needs a model provider that is not configured on this deployment (the "
        "detail names the setting), or every provider for it failed. Nothing was charged.",
        "Retry after Retry-After seconds. On your own deployment, set the setting the "
        "detail names (e.g. AI_BASE_URL).",
    ),
    ProblemType(
        "embedded_model_unfit", (503,), "The embedded model could not give a usable answer",
        "No model provider is configured (or none answered), and the small model embedded in "
        "the service answered twice without giving an answer that passes the tool's checks: "
        "it repeated itself in a loop, broke the tool's output format, handed the input back "
        "or stated what the input does not hold. Nothing is returned rather than a wrong "
        "answer, and nothing was charged.",
        "Try again with a shorter or plainer input. On your own deployment, configure a "
        "model provider (AI_BASE_URL, with AI_API_KEY and AI_MODEL_CHAT) for dependable "
        "answers.",
    ),
    ProblemType(
        "service_unavailable", (503,), "Temporarily unavailable",
        "Redis or the database could not be reached for a moment: the request was not "
        "carried out and nothing was charged.",
        "Retry after Retry-After seconds.",
    ),
)  # fmt: skip

PROBLEM_TYPES: dict[str, ProblemType] = {problem.code: problem for problem in _TYPES}
BY_SLUG: dict[str, ProblemType] = {problem.slug: problem for problem in _TYPES}
