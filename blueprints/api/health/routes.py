import time

from flask import current_app, jsonify
from flask.views import MethodView
from flask_smorest import Blueprint
from sqlalchemy import text

from blueprints.api.docs import PUBLIC
from blueprints.api.health.schemas import ChatbotHealthSchema, HealthSchema
from extensions import db
from services.assistant.health import chatbot_health
from services.redis import redis_client

HEALTH_JSON = "application/health+json"

blp = Blueprint("health", __name__, url_prefix="/v1/health", description="Service health.")


def _timed(check) -> dict:
    started = time.perf_counter()
    try:
        detail = check()
    except Exception as error:  # a health check reports failures, it never raises
        return {"status": "error", "detail": type(error).__name__}
    result = {"status": "ok", "latency_ms": round((time.perf_counter() - started) * 1000, 2)}
    if detail:
        result["detail"] = detail
    return result


def _database():
    db.session.execute(text("SELECT 1"))
    db.session.rollback()
    return db.engine.dialect.name


def _redis_checks() -> tuple[dict, dict]:
    client = redis_client(current_app)
    if client is None:
        embedded = {"status": "ok", "detail": "embedded: in-process, no Redis configured"}
        return embedded, embedded
    redis_check = _timed(client.ping)
    queue_check = _timed(lambda: f"{client.llen('rq:queue:default')} queued")
    return redis_check, queue_check


def _engines() -> dict:
    """Which tools cannot run here, and why (a heavy engine not installed, no provider)."""
    reasons: dict[str, list[str]] = {}
    for tool in current_app.extensions["catalogue"].tools.values():
        reason = tool.unavailable_reason
        if reason is not None:
            reasons.setdefault(reason, []).append(tool.slug)
    if not reasons:
        return {"status": "ok", "detail": "every tool can run"}
    detail = "; ".join(f"{len(slugs)} tool(s): {reason}" for reason, slugs in reasons.items())
    return {"status": "degraded", "detail": detail}


@blp.route("")
class Health(MethodView):
    @blp.response(200, HealthSchema)
    @blp.alt_response(503, schema=HealthSchema, description="A required component is down.")
    @blp.doc(operationId="getHealth", security=PUBLIC)
    def get(self):
        """Reachability of the database, Redis and the job queue, and which tools cannot run
        here (no secrets). 503 only when a required component is down."""
        redis_check, queue_check = _redis_checks()
        required = {"database": _timed(_database), "redis": redis_check, "queue": queue_check}
        healthy = all(check["status"] == "ok" for check in required.values())
        engines = _engines()
        status = "unavailable" if not healthy else engines["status"]
        body = {"status": status, "checks": {**required, "engines": engines}}
        return body, 200 if healthy else 503


@blp.route("/chatbot")
class ChatbotHealth(MethodView):
    @blp.response(200, ChatbotHealthSchema, content_type=HEALTH_JSON)
    @blp.alt_response(
        503,
        schema=ChatbotHealthSchema,
        content_type=HEALTH_JSON,
        description="The assistant cannot answer (its index could not be built).",
    )
    @blp.doc(operationId="getChatbotHealth", security=PUBLIC)
    def get(self):
        """The site assistant's health (IETF health-check draft): its index, embedder, answer
        mode and the model provider's reachability from a cached probe; no secrets."""
        body, status = chatbot_health(current_app.config)
        response = jsonify(ChatbotHealthSchema().dump(body))
        response.status_code = status
        response.mimetype = HEALTH_JSON
        response.headers["Cache-Control"] = "no-store"
        return response
