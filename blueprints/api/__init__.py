"""The v1 JSON API: flask-smorest with problem-details errors everywhere under /v1."""

import http
import io
import logging
from functools import lru_cache

import redis
import sqlalchemy.exc
from flask import current_app, g, request
from flask.sessions import SecureCookieSessionInterface
from flask_smorest import Api
from itsdangerous import URLSafeTimedSerializer
from werkzeug.exceptions import (
    HTTPException,
    InternalServerError,
    SecurityError,
    ServiceUnavailable,
)
from werkzeug.routing import BaseConverter

from blueprints.api.pipeline import API_KEY_HEADER, rate_limit_headers, settle_limit, too_large
from blueprints.api.problems import Problem, from_http_exception, problem_response
from blueprints.api.schemas import ProblemSchema
from catalogue import Tool
from extensions import db
from services import storage

log = logging.getLogger(__name__)

API_PREFIX = "/v1"

# A backing service unreachable: Redis (limits, quota, queue, idempotency) or the database
# (refused, dropped or saturated connections). The request is answered 503, never 500.
OUTAGES = (
    redis.ConnectionError,
    redis.TimeoutError,
    sqlalchemy.exc.OperationalError,
    sqlalchemy.exc.TimeoutError,
)
OUTAGE_RETRY_AFTER = 5


class PlatformApi(Api):
    """flask-smorest's Api with RFC 9457 errors instead of its ``{code, status, message}``."""

    DEFAULT_ERROR_RESPONSE_NAME = None
    ERROR_SCHEMA = ProblemSchema

    def _register_error_handlers(self):
        """Errors are registered app-wide by ``register_api`` (API and site differ)."""

    def _register_pagination_header(self):
        """No flask-smorest pagination here (deliveries page by cursor): its
        ``PaginationMetadata`` schema stayed in the document unused, a model in every
        generated client."""

    def _register_responses(self):
        self.spec.components.schema("Problem", schema=ProblemSchema)
        for status in http.HTTPStatus:
            if status >= 400:
                self.spec.components.response(
                    status.name,
                    {
                        "description": status.phrase,
                        "content": {
                            "application/problem+json": {
                                "schema": {"$ref": "#/components/schemas/Problem"}
                            }
                        },
                    },
                    lazy=True,
                )


class ToolSlugConverter(BaseConverter):
    """A path segment naming a tool; ``run`` and ``runs`` are reserved for run routes."""

    regex = r"(?!runs?(?![^/]))[^/]+"
    pattern = r"^(?!runs?$)[^/]+$"


def is_api_path(path: str) -> bool:
    return path == API_PREFIX or path.startswith(API_PREFIX + "/")


def is_api_request() -> bool:
    return is_api_path(request._get_current_object().path)


class StatelessApiSessions(SecureCookieSessionInterface):
    """No cookie session under /v1: the API knows a caller by its key alone, so a browser's
    site cookie is neither read nor written there (and opening it cost every API request
    a signature check)."""

    def open_session(self, app, request):
        if is_api_path(request.path):
            return None  # Flask then uses a null session, which it never saves
        return super().open_session(app, request)

    def get_signing_serializer(self, app):
        """Flask's serializer, made once per secret key (Flask builds a new one to open and
        another to save each session: a tenth of a site page's first visit)."""
        if not app.secret_key:
            return None
        fallbacks = tuple(app.config["SECRET_KEY_FALLBACKS"] or ())
        return self._serializer(app.secret_key, fallbacks)

    @lru_cache(maxsize=4)  # noqa: B019 (one interface per app; a few keys over its life)
    def _serializer(self, secret_key, fallbacks):
        return URLSafeTimedSerializer(
            [*fallbacks, secret_key],  # itsdangerous signs with the last
            salt=self.salt,
            serializer=self.serializer,
            signer_kwargs={
                "key_derivation": self.key_derivation,
                "digest_method": self.digest_method,
            },
        )


def register_api(app, error_page) -> None:
    """The API's blueprints, its OpenAPI document and the app's error handlers: problem
    documents under /v1, ``error_page(error)`` (the site's page for an HTTP error) elsewhere."""
    from blueprints.api.audiobooks.routes import blp as audiobooks_blp
    from blueprints.api.deprecation import register as register_deprecations
    from blueprints.api.embeds.routes import blp as embeds_blp
    from blueprints.api.files.routes import blp as files_blp
    from blueprints.api.health.routes import blp as health_blp
    from blueprints.api.images.routes import blp as images_blp
    from blueprints.api.openapi.routes import blp as openapi_blp
    from blueprints.api.tools.openapi import ToolSchemasPlugin
    from blueprints.api.tools.routes import blp as tools_blp
    from blueprints.api.video.routes import blp as video_blp
    from blueprints.api.voice.routes import blp as voice_blp
    from blueprints.api.webhook.routes import blp as webhook_blp
    from blueprints.api.white_label.routes import blp as white_label_blp
    from blueprints.api.whoami.routes import blp as whoami_blp
    from blueprints.api.workflows.routes import blp as workflows_blp

    app.session_interface = StatelessApiSessions()

    app.config.setdefault(
        "API_SPEC_OPTIONS",
        {
            "info": {
                "description": "Run hundreds of AI tools and multi-step workflows over JSON. "
                "Authenticate with your key in the `X-SVC-API-Key` header.",
            },
            "servers": [{"url": "/", "description": "This server"}],
        },
    )
    app.url_map.converters["slug"] = ToolSlugConverter
    api = PlatformApi(
        spec_kwargs={"extra_plugins": [ToolSchemasPlugin(app.extensions["catalogue"])]}
    )
    api.register_converter(
        ToolSlugConverter, lambda _: {"type": "string", "pattern": ToolSlugConverter.pattern}
    )
    api.init_app(app)
    api.spec.components.security_scheme(
        "ApiKeyHeader", {"type": "apiKey", "in": "header", "name": API_KEY_HEADER}
    )
    api.spec.components.security_scheme(
        "BearerKey", {"type": "http", "scheme": "bearer", "description": "The same API key."}
    )
    # Before the blueprints: the OpenAPI operations are marked as they are added.
    register_deprecations(app, api)
    plan_gated = (images_blp, voice_blp, video_blp, audiobooks_blp)
    for blp in (
        whoami_blp,
        tools_blp,
        workflows_blp,
        *plan_gated,
        files_blp,
        webhook_blp,
        embeds_blp,
        white_label_blp,
        health_blp,
        openapi_blp,
    ):
        api.register_blueprint(blp)
    # Runs of the plan-gated endpoints name these tools (services.runs.find_tool).
    app.extensions["endpoint_tools"] = endpoint_tools()
    app.extensions["error_page"] = error_page
    # The MCP endpoint is JSON-RPC, not a REST resource: outside the OpenAPI document
    # (docs/api/mcp.md describes it).
    from blueprints.api.mcp.routes import bp as mcp_bp

    app.register_blueprint(mcp_bp)
    app.register_error_handler(Problem, _handle_problem)
    app.register_error_handler(HTTPException, _handle_http_exception)
    app.register_error_handler(SecurityError, _handle_untrusted_host)
    app.register_error_handler(Exception, _handle_unexpected)
    for outage in OUTAGES:
        app.register_error_handler(outage, _handle_outage)
    # Run tools store files too: a bucket that is down is a 503 wherever it happens.
    app.register_error_handler(storage.StorageUnavailable, _handle_storage_unavailable)
    app.before_request(_refuse_large_bodies)
    app.after_request(_api_headers)


def endpoint_tools() -> dict[str, Tool]:
    """The tools behind the plan-gated endpoints, by slug."""
    from blueprints.api.audiobooks.tool import AUDIOBOOK
    from blueprints.api.images.tool import GENERATE_IMAGES
    from blueprints.api.video.tool import GENERATE_VIDEO
    from blueprints.api.voice.tool import SPEAK

    return {tool.slug: tool for tool in (GENERATE_IMAGES, SPEAK, GENERATE_VIDEO, AUDIOBOOK)}


def _handle_problem(problem: Problem):
    return problem_response(_limit_first(problem))


def _site_page(error: HTTPException):
    """An error outside /v1: the site's page for it (``register_api``'s ``error_page``)."""
    return current_app.extensions["error_page"](error)


def _handle_http_exception(error: HTTPException):
    if not is_api_request():
        return _site_page(error)
    return problem_response(_limit_first(from_http_exception(error)))


def _handle_untrusted_host(_error: SecurityError):
    """A request for a host that is not the deployment's (TRUSTED_HOSTS, services/urls.py):
    a problem document on every path, since no page can be built for a host it does not
    serve (its URLs would be the request's)."""
    return problem_response(
        Problem(
            400,
            "bad_request",
            "The request's Host header names a host this service does not answer for.",
        )
    )


def _handle_unexpected(error: Exception):
    log.exception("unhandled error on %s %s", request.method, request.path)
    if not is_api_request():
        return _site_page(InternalServerError())
    return problem_response(_limit_first(from_http_exception(InternalServerError())))


def _handle_storage_unavailable(error: storage.StorageUnavailable):
    if not is_api_request():
        return _site_page(ServiceUnavailable(retry_after=error.retry_after))
    problem = Problem(
        503, "provider_unavailable", error.message, headers={"Retry-After": error.retry_after}
    )
    return problem_response(problem)


def _handle_outage(error: Exception):
    """Redis or the database is unreachable: 503 ``service_unavailable`` with Retry-After.
    Nothing more is asked of Redis in this request (no deferred limit, no limit headers),
    and the connection pools reconnect by themselves once the service is back."""
    log.warning(
        "%s %s: a backing service is unreachable: %s: %s",
        request.method,
        request.path,
        type(error).__name__,
        (str(error).splitlines() or [""])[0],
    )
    g.limit_pending = False
    g.minute_window = None
    try:
        db.session.rollback()
    except Exception:  # the connection may be the thing that is gone
        log.debug("rollback after an outage failed", exc_info=True)
    if not is_api_request():
        return ServiceUnavailable(retry_after=OUTAGE_RETRY_AFTER)
    return problem_response(
        Problem(
            503,
            "service_unavailable",
            "The service cannot reach its data store for a moment, so this request was not "
            f"carried out and nothing was charged. Retry in {OUTAGE_RETRY_AFTER} s.",
            headers={"Retry-After": OUTAGE_RETRY_AFTER},
        )
    )


def _limit_first(problem: Problem) -> Problem:
    """A refusal found while the per-minute hit was still deferred (the run endpoints):
    the hit is spent now, and a caller over its limit gets that 429 instead, since the
    limit comes first in the pipeline."""
    try:
        settle_limit()
    except Problem as limited:
        return limited
    except OUTAGES as error:  # the refusal stands even if the limit cannot be reached
        g.limit_pending = False
        log.warning("could not spend the deferred per-minute hit: %s", error)
    except Exception:
        log.exception("could not spend the deferred per-minute hit")
    return problem


_FILE_ENDPOINTS = frozenset(
    {
        "tools.RunBySlug",
        "tools.RunDispatch",
        "video.VideoGenerate",
        "audiobooks.Audiobooks",
        "workflows.WorkflowRunStart",
    }
)


def _refuse_large_bodies():
    """413 comes first in the pipeline, before the key is even looked at: 1 MiB, or 25 MiB
    where a request may carry files (the run endpoints check text tools' 1 MiB once the
    tool is known). A chunked body is bounded the same way (``_read_chunked_body``)."""
    this_request = request._get_current_object()  # one proxy lookup (pipeline/keys.py says why)
    length = this_request.content_length
    chunked = length is None and "HTTP_TRANSFER_ENCODING" in this_request.environ
    if chunked and is_api_request():
        length = _read_chunked_body(this_request)
    if not length:
        return  # the usual case, answered first: no body
    config = current_app._get_current_object().config
    if length <= config["MAX_TEXT_BODY"] or not is_api_request():
        return  # a body within every limit
    limit = _body_limit(this_request, config)
    if length > limit:
        raise too_large(limit)


def _body_limit(this_request, config) -> int:
    """The largest body ``this_request``'s endpoint takes."""
    if this_request.endpoint in _FILE_ENDPOINTS:
        return config["MAX_CONTENT_LENGTH"]
    return config["MAX_TEXT_BODY"]


_CHUNK_READ = 64 * 1024


def _read_chunked_body(this_request) -> int:
    """Read a chunked body (the web command's worker hands every body on with its length;
    the embedded default's server does not) no further than the endpoint's limit: 413 past
    it. Otherwise it is handed on as a body of declared length, as every other is, and its
    length is returned."""
    limit = _body_limit(this_request, current_app._get_current_object().config)
    stream, parts, size = this_request.stream, [], 0
    while size <= limit and (part := stream.read(min(_CHUNK_READ, limit + 1 - size))):
        parts.append(part)
        size += len(part)
    if size > limit:
        raise too_large(limit)
    data = b"".join(parts)
    environ = this_request.environ
    del environ["HTTP_TRANSFER_ENCODING"]
    environ["CONTENT_LENGTH"] = str(size)
    environ["wsgi.input"] = io.BytesIO(data)
    for cached in ("content_length", "stream"):  # cached_properties: read them again
        this_request.__dict__.pop(cached, None)
    this_request._cached_data = data
    return size


def _api_headers(response):
    if not is_api_request():
        return response
    try:
        # Every request spends its hit, even one that never ran.
        if g._get_current_object().get("limit_pending"):
            try:
                settle_limit()
            except Problem as limited:
                response = problem_response(limited)
        return rate_limit_headers(response)
    except OUTAGES as error:  # Redis went away after the answer was made: keep the answer
        log.warning("no limit headers on %s: %s", request.path, error)
        return response
