"""The calling key's webhook: its URL and secret, the log of deliveries, redelivery and the
test event (docs/architecture/webhooks.md). Everything here belongs to the key that calls: another
key's delivery is not found (404), never forbidden."""

import marshmallow as ma
from flask import request, url_for
from flask.views import MethodView
from flask_smorest import Blueprint

from blueprints.api.docs import API_KEY_SECURITY, problem_responses
from blueprints.api.pipeline import authenticate, json_body, require_api_access, validation_failed
from blueprints.api.problems import Problem
from blueprints.api.webhook.schemas import (
    DeliveryListSchema,
    DeliveryQuerySchema,
    DeliverySchema,
    WebhookSchema,
    WebhookTestResultSchema,
    WebhookUpdateSchema,
)
from extensions import db
from jobs.webhooks import schedule
from models import ApiKey, WebhookDelivery
from services import webhooks
from services.webhooks import WebhookRefused

blp = Blueprint(
    "webhook",
    __name__,
    url_prefix="/v1/webhook",
    description="Your key's webhook: URL and secret, the deliveries log, redelivery, a test event.",
)

_WEBHOOK_EXAMPLE = {
    "url": "https://example.com/hooks/svc",
    "status": "active",
    "disabled_at": None,
    "disabled_reason": None,
    "secret_hint": "whsec_Zm9v…",
    "previous_secret_until": None,
    "events": [
        "tool.completed",
        "tool.failed",
        "workflow.completed",
        "workflow.failed",
        "webhook.test",
    ],
}
_DELIVERY_EXAMPLE = {
    "id": "5f0c6a57-8a7e-4a53-9a63-0d7f4c1b2e10",
    "event": "tool.completed",
    "event_id": "evt_0b8f6c1e-4f3a-4c7e-9a51-2d5e8f7a9c10",
    "run_id": "0b8f6c1e-4f3a-4c7e-9a51-2d5e8f7a9c10",
    "status": "pending",
    "attempt_count": 1,
    "max_attempts": 8,
    "next_attempt_at": "2026-11-22T10:00:05.210000+00:00",
    "created_at": "2026-11-22T10:00:00.000000+00:00",
    "last_attempt_at": "2026-11-22T10:00:00.120000+00:00",
    "payload": {
        "event": "tool.completed",
        "run_id": "0b8f6c1e-4f3a-4c7e-9a51-2d5e8f7a9c10",
        "tool": "blog-post-generator",
        "duration_ms": 8421,
        "output_excerpt": "Ten ways to brew better coffee at home ...",
    },
    "attempts": [
        {
            "number": 1,
            "at": "2026-11-22T10:00:00+00:00",
            "url": "https://example.com/hooks/svc",
            "status_code": 503,
            "error": None,
            "latency_ms": 118,
            "retry_after": None,
        }
    ],
}
_NOT_FOUND = problem_responses(404)
_NOT_FOUND["404"]["description"] = "No delivery of this key has this id [delivery_not_found]."
_CONFLICT = problem_responses(409)
_CONFLICT["409"]["description"] = (
    "The key has no webhook URL [webhook_not_set], its webhook is disabled [webhook_disabled] "
    "or an attempt is in flight [delivery_in_progress]."
)


def _calling_key() -> ApiKey:
    """The calling key's row (401, 429; 403 for keys without API access)."""
    context = authenticate()
    require_api_access()
    return db.session.get(ApiKey, context.key_id)


def _load(schema: ma.Schema, data: dict) -> dict:
    try:
        return schema.load(data)
    except ma.ValidationError as error:
        raise validation_failed(_field_errors(error.messages)) from None


def _field_errors(messages) -> dict[str, list[str]]:
    if not isinstance(messages, dict):
        return {"": [str(messages)]}
    return {
        field: [str(m) for m in (problems if isinstance(problems, list) else [problems])]
        for field, problems in messages.items()
    }


def _refused(refused: WebhookRefused, field: str = "url") -> Problem:
    if refused.status == 422:
        return validation_failed({field: [refused.message]})
    return Problem(refused.status, refused.code, refused.message)


def _own_delivery(key: ApiKey, delivery_id) -> WebhookDelivery:
    delivery = webhooks.find(key.id, str(delivery_id))
    if delivery is None:
        raise Problem(
            404, "delivery_not_found", f"There is no delivery {delivery_id} for this key."
        )
    return delivery


@blp.route("")
class Webhook(MethodView):
    @blp.response(200, WebhookSchema, example=_WEBHOOK_EXAMPLE)
    @blp.doc(
        operationId="getWebhook",
        security=API_KEY_SECURITY,
        responses=problem_responses(401, 403, 429),
    )
    def get(self):
        """The calling key's webhook: URL, state and the events it receives (no secret)."""
        return webhooks.describe(_calling_key())

    @blp.response(
        200,
        WebhookSchema,
        description="The webhook as saved; `secret` only when it was created or rotated. "
        "After a rotation the old secret signs beside the new one until "
        "`previous_secret_until` (24 hours): `webhook-signature: v1,<new> v1,<old>`.",
        example={
            **_WEBHOOK_EXAMPLE,
            "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "previous_secret_until": "2026-11-23T10:00:00+00:00",
        },
    )
    @blp.doc(
        operationId="setWebhook",
        security=API_KEY_SECURITY,
        requestBody={
            "required": True,
            "content": {
                "application/json": {
                    "schema": WebhookUpdateSchema,
                    "example": {"url": "https://example.com/hooks/svc", "rotate_secret": False},
                }
            },
        },
        responses=problem_responses(400, 401, 403, 413, 415, 422, 429),
    )
    def put(self):
        """Set, change or remove the calling key's webhook URL; rotate its secret."""
        key = _calling_key()
        data = _load(WebhookUpdateSchema(), json_body())
        try:
            if "url" in data:
                secret = webhooks.save(key, data["url"], rotate_secret=data["rotate_secret"])
            else:
                secret = webhooks.rotate(key) if data["rotate_secret"] else None
        except WebhookRefused as refused:
            db.session.rollback()
            raise _refused(refused) from None
        db.session.commit()
        answer = webhooks.describe(key)
        if secret is not None:
            answer["secret"] = secret
        return answer, 200, {"Cache-Control": "no-store"}


@blp.route("/deliveries")
class Deliveries(MethodView):
    @blp.response(
        200, DeliveryListSchema, example={"deliveries": [_DELIVERY_EXAMPLE], "next_cursor": None}
    )
    @blp.doc(
        operationId="listWebhookDeliveries",
        security=API_KEY_SECURITY,
        parameters=[{"in": "query", "schema": DeliveryQuerySchema}],
        responses=problem_responses(401, 403, 422, 429),
    )
    def get(self):
        """The calling key's deliveries, newest first, with every attempt (paginated)."""
        key = _calling_key()
        query = _load(DeliveryQuerySchema(), request.args.to_dict())
        try:
            page, cursor = webhooks.deliveries(
                key.id,
                status=query.get("status"),
                limit=query["limit"],
                cursor=query.get("cursor"),
            )
        except ValueError:
            raise validation_failed({"cursor": ["Not a cursor from this API."]}) from None
        return {
            "deliveries": [webhooks.delivery_record(delivery) for delivery in page],
            "next_cursor": cursor,
        }


@blp.route("/deliveries/<uuid:delivery_id>")
class DeliveryById(MethodView):
    @blp.response(200, DeliverySchema, example=_DELIVERY_EXAMPLE)
    @blp.doc(
        operationId="getWebhookDelivery",
        security=API_KEY_SECURITY,
        responses={**problem_responses(401, 403, 429), **_NOT_FOUND},
    )
    def get(self, delivery_id):
        """One delivery of the calling key, with every attempt."""
        key = _calling_key()
        return webhooks.delivery_record(_own_delivery(key, delivery_id))


@blp.route("/deliveries/<uuid:delivery_id>/redeliver")
class Redeliver(MethodView):
    @blp.response(
        202,
        DeliverySchema,
        description="A new attempt of the same event (the same `webhook-id`) is queued; "
        "follow it at `Location`.",
        example={**_DELIVERY_EXAMPLE, "status": "pending"},
        headers={"Location": {"schema": {"type": "string"}, "description": "The delivery."}},
    )
    @blp.doc(
        operationId="redeliverWebhookDelivery",
        security=API_KEY_SECURITY,
        responses={**problem_responses(401, 403, 429), **_NOT_FOUND, **_CONFLICT},
    )
    def post(self, delivery_id):
        """Send an event again now: one more attempt (or, while retries remain, the next
        one brought forward)."""
        key = _calling_key()
        delivery = _own_delivery(key, delivery_id)
        try:
            webhooks.redeliver(delivery, key)
        except WebhookRefused as refused:
            db.session.rollback()
            raise _refused(refused) from None
        db.session.commit()
        schedule(delivery.id)
        location = url_for("webhook.DeliveryById", delivery_id=delivery.id)
        return webhooks.delivery_record(delivery), 202, {"Location": location}


@blp.route("/test")
class WebhookTest(MethodView):
    @blp.response(
        200,
        WebhookTestResultSchema,
        description="The test event was sent: what came back (never the receiver's body).",
        example={
            "delivery_id": "5f0c6a57-8a7e-4a53-9a63-0d7f4c1b2e10",
            "event_id": "evt_9a1d2c3b-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
            "status": "succeeded",
            "status_code": 204,
            "error": None,
            "latency_ms": 87,
        },
    )
    @blp.doc(
        operationId="testWebhook",
        security=API_KEY_SECURITY,
        responses={**problem_responses(401, 403, 429), **_CONFLICT},
    )
    def post(self):
        """Send a `webhook.test` event to the webhook now and report how it went."""
        key = _calling_key()
        try:
            outcome = webhooks.send_test(key)
        except WebhookRefused as refused:
            raise _refused(refused) from None
        attempt = outcome.attempt or {}
        return {
            "delivery_id": outcome.delivery.id,
            "event_id": outcome.delivery.event_id,
            "status": outcome.delivery.status,
            "status_code": attempt.get("status_code"),
            "error": attempt.get("error"),
            "latency_ms": attempt.get("latency_ms", 0),
        }
