import marshmallow as ma

from models import DELIVERY_STATES
from services.events import EVENTS
from services.webhooks import MAX_URL_LENGTH


class WebhookUpdateSchema(ma.Schema):
    """What to change; a field left out is left as it is."""

    url = ma.fields.String(
        allow_none=True,
        validate=ma.validate.Length(min=1, max=MAX_URL_LENGTH),
        metadata={
            "format": "uri",
            "description": "http(s) URL receiving the events (port 80, 443 or from 1024 up; "
            "its host must resolve to public addresses); null removes the webhook. Saving a "
            "URL on a key without one creates the webhook and shows its new secret; saving it "
            "again re-enables a webhook disabled by a 410 Gone.",
        },
    )
    rotate_secret = ma.fields.Boolean(
        load_default=False,
        metadata={
            "description": "Replace the secret; the new one is in the answer, shown only then. "
            "The old secret keeps signing beside it for 24 hours (until "
            "`previous_secret_until`): each delivery's `webhook-signature` then carries both "
            "signatures, `v1,<new> v1,<old>`, so receivers can switch secrets without missing "
            "an event."
        },
    )


class WebhookSchema(ma.Schema):
    """The calling key's webhook."""

    url = ma.fields.String(required=True, allow_none=True, metadata={"format": "uri"})
    status = ma.fields.String(
        required=True,
        metadata={
            "enum": ["active", "disabled", "not_set"],
            "description": "`disabled` after the receiver answered 410 Gone.",
        },
    )
    disabled_at = ma.fields.DateTime(required=True, allow_none=True)
    disabled_reason = ma.fields.String(required=True, allow_none=True)
    secret_hint = ma.fields.String(
        required=True,
        metadata={"description": "The secret's first characters, to tell secrets apart."},
    )
    previous_secret_until = ma.fields.DateTime(
        required=True,
        allow_none=True,
        metadata={
            "description": "After a rotation: until when the previous secret still signs "
            "each delivery beside the current one (a second `v1,` signature in "
            "`webhook-signature`); null when it does not."
        },
    )
    events = ma.fields.List(
        ma.fields.String(metadata={"enum": list(EVENTS)}),
        required=True,
        metadata={"description": "The events sent to the webhook."},
    )
    secret = ma.fields.String(
        metadata={
            "description": "The signing secret (`whsec_` + base64). Only in the answer that "
            "created the webhook or rotated its secret: store it then."
        }
    )


class AttemptSchema(ma.Schema):
    """One attempt to deliver an event; the receiver's body is never kept."""

    number = ma.fields.Integer(required=True)
    at = ma.fields.String(required=True, metadata={"format": "date-time"})
    url = ma.fields.String(required=True, metadata={"format": "uri"})
    status_code = ma.fields.Integer(
        required=True, allow_none=True, metadata={"description": "null when none came back."}
    )
    error = ma.fields.String(
        required=True,
        allow_none=True,
        metadata={"description": "Why it failed when the status code does not say it."},
    )
    latency_ms = ma.fields.Integer(required=True)
    retry_after = ma.fields.Integer(
        required=True,
        allow_none=True,
        metadata={"description": "The receiver's Retry-After, in seconds."},
    )


class DeliverySchema(ma.Schema):
    """An event sent (or being sent) to the webhook, with every attempt."""

    id = ma.fields.UUID(required=True)
    event = ma.fields.String(required=True, metadata={"enum": list(EVENTS)})
    event_id = ma.fields.String(
        required=True, metadata={"description": "The `webhook-id` header of every attempt."}
    )
    run_id = ma.fields.String(required=True, allow_none=True)
    status = ma.fields.String(
        required=True,
        metadata={
            "enum": list(DELIVERY_STATES),
            "description": "`pending` while attempts remain, `disabled` when the webhook was "
            "disabled or removed before the event got through.",
        },
    )
    attempt_count = ma.fields.Integer(required=True)
    max_attempts = ma.fields.Integer(required=True)
    next_attempt_at = ma.fields.DateTime(required=True, allow_none=True)
    created_at = ma.fields.DateTime(required=True)
    last_attempt_at = ma.fields.DateTime(required=True, allow_none=True)
    payload = ma.fields.Dict(
        required=True,
        metadata={"description": "The event; each attempt adds `delivered_at` and `signature`."},
    )
    attempts = ma.fields.List(ma.fields.Nested(AttemptSchema), required=True)


class DeliveryQuerySchema(ma.Schema):
    status = ma.fields.String(validate=ma.validate.OneOf(DELIVERY_STATES))
    limit = ma.fields.Integer(
        load_default=20,
        validate=ma.validate.Range(min=1, max=100),
        metadata={"description": "Deliveries per page (1-100)."},
    )
    cursor = ma.fields.String(
        validate=ma.validate.Length(max=200),
        metadata={"description": "`next_cursor` of the previous page."},
    )


class DeliveryListSchema(ma.Schema):
    deliveries = ma.fields.List(ma.fields.Nested(DeliverySchema), required=True)
    next_cursor = ma.fields.String(
        required=True, allow_none=True, metadata={"description": "null on the last page."}
    )


class WebhookTestResultSchema(ma.Schema):
    """What the test event got: never the receiver's body."""

    delivery_id = ma.fields.UUID(required=True)
    event_id = ma.fields.String(required=True)
    status = ma.fields.String(required=True, metadata={"enum": ["succeeded", "failed", "disabled"]})
    status_code = ma.fields.Integer(required=True, allow_none=True)
    error = ma.fields.String(required=True, allow_none=True)
    latency_ms = ma.fields.Integer(required=True)
