"""RFC 9457 problem details: the one error format of everything under /v1."""

from http import HTTPStatus

from flask import g, jsonify, request
from werkzeug.exceptions import HTTPException

from services import urls

# Where each code's page is (blueprints/api/problem_types.py), under this service's address.
PROBLEM_DOCS_PATH = "/docs/problems/"
PROBLEM_JSON = "application/problem+json"

# Codes for plain HTTP errors raised by Flask/werkzeug themselves.
_HTTP_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_failed",
    429: "rate_limited",
    500: "internal_error",
}


class Problem(Exception):
    """Raise to answer with a problem-details body."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        title: str | None = None,
        headers: dict | None = None,
        **extensions,
    ):
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.title = title or HTTPStatus(status).phrase
        self.headers = headers or {}
        self.extensions = extensions


def problem_type_uri(code: str, base_url: str) -> str:
    """The page explaining ``code``, on the service at ``base_url``."""
    return base_url.rstrip("/") + PROBLEM_DOCS_PATH + code.replace("_", "-")


def problem_body(problem: Problem) -> dict:
    """The problem document of ``problem`` (also the data of a run's ``error`` event)."""
    return {
        "type": problem_type_uri(problem.code, urls.base_url()),
        "title": problem.title,
        "status": problem.status,
        "detail": problem.detail,
        "code": problem.code,
        "request_id": g.get("request_id", ""),
        **problem.extensions,
    }


def problem_response(problem: Problem):
    response = jsonify(problem_body(problem))
    response.status_code = problem.status
    response.mimetype = PROBLEM_JSON
    for name, value in problem.headers.items():
        response.headers[name] = str(value)
    return response


def from_http_exception(error: HTTPException) -> Problem:
    status = error.code or 500
    code = _HTTP_CODES.get(status, HTTPStatus(status).phrase.lower().replace(" ", "_"))
    detail = {
        404: f"There is no API endpoint at {request.path}.",
        405: f"{request.method} is not allowed on {request.path}.",
        413: "The request body is larger than this endpoint accepts.",
        500: "Something went wrong on our side; the request id helps us find out what.",
    }.get(status, error.description or HTTPStatus(status).description)
    headers = {}
    extensions = {}
    messages = (getattr(error, "data", None) or {}).get("messages")
    if status == 422 and isinstance(messages, dict):
        # webargs (flask-smorest's arguments) nests messages by location: flatten them.
        extensions["errors"] = {
            field: [str(m) for m in (problems if isinstance(problems, list) else [problems])]
            for fields in messages.values()
            for field, problems in (fields.items() if isinstance(fields, dict) else [])
        }
        detail = f"The request has invalid fields: {', '.join(sorted(extensions['errors']))}."
    if status == 405 and getattr(error, "valid_methods", None):
        headers["Allow"] = ", ".join(sorted(error.valid_methods))
    return Problem(status, code, detail, headers=headers, **extensions)
