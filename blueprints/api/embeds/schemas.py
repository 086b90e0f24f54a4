"""The embeds' bodies and answers, for the OpenAPI document (services/embeds.py checks what
is sent: one validation for the API and the account page)."""

import marshmallow as ma

from services.embeds import CAPS, MAX_NAME_LENGTH, MAX_ORIGINS


def _cap(name: str, description: str) -> ma.fields.Integer:
    low, high, default = CAPS[name]
    return ma.fields.Integer(
        metadata={
            "minimum": low,
            "maximum": high,
            "default": default,
            "description": f"{description} (default {default}).",
        }
    )


_ORIGINS_DESCRIPTION = (
    "The exact origins (`scheme://host[:port]`, http or https) of the pages that may show the "
    "widget; no path, query, user name or wildcard. Scheme and host are lower-cased and a "
    "default port left out. Sent as the page's `Content-Security-Policy: frame-ancestors`; "
    "an empty list lets no page show it."
)


class EmbedCreateSchema(ma.Schema):
    """A new widget: the tool it runs and the origins that may show it."""

    tool = ma.fields.String(
        required=True,
        metadata={
            "description": "The slug of a tool the account's plan runs and this deployment "
            "can run (queued tools and tools that make files included: the widget shows the "
            "run's progress, then its output and files)."
        },
    )
    allowed_origins = ma.fields.List(
        ma.fields.String(metadata={"format": "uri"}),
        required=True,
        metadata={"maxItems": MAX_ORIGINS, "description": _ORIGINS_DESCRIPTION},
    )
    name = ma.fields.String(
        allow_none=True,
        metadata={"maxLength": MAX_NAME_LENGTH, "description": "Defaults to the tool's name."},
    )
    per_minute = _cap("per_minute", "Runs a minute, for all visitors together")
    per_visitor_daily = _cap("per_visitor_daily", "Runs a day per visitor (by address)")
    daily = _cap("daily", "Runs a day, for all visitors together")
    enabled = ma.fields.Boolean(
        metadata={"default": True, "description": "A disabled widget shows nothing."}
    )


class EmbedUpdateSchema(ma.Schema):
    """What to change; a field left out is left as it is (the tool cannot change)."""

    allowed_origins = ma.fields.List(
        ma.fields.String(metadata={"format": "uri"}),
        metadata={"maxItems": MAX_ORIGINS, "description": _ORIGINS_DESCRIPTION},
    )
    name = ma.fields.String(allow_none=True, metadata={"maxLength": MAX_NAME_LENGTH})
    per_minute = _cap("per_minute", "Runs a minute, for all visitors together")
    per_visitor_daily = _cap("per_visitor_daily", "Runs a day per visitor (by address)")
    daily = _cap("daily", "Runs a day, for all visitors together")
    enabled = ma.fields.Boolean()
    rotate_public_id = ma.fields.Boolean(
        metadata={
            "description": "Give the widget a new public id: pages showing the old one (and "
            "their tokens) stop working; update the snippet where it is used."
        }
    )


class EmbedSchema(ma.Schema):
    """An embeddable widget of the account."""

    id = ma.fields.UUID(required=True)
    public_id = ma.fields.String(
        required=True, metadata={"description": "The only id a page sees (in `embed_url`)."}
    )
    name = ma.fields.String(required=True)
    tool = ma.fields.String(required=True, metadata={"description": "The tool's slug."})
    allowed_origins = ma.fields.List(ma.fields.String(), required=True)
    per_minute = ma.fields.Integer(required=True)
    per_visitor_daily = ma.fields.Integer(required=True)
    daily = ma.fields.Integer(required=True)
    enabled = ma.fields.Boolean(required=True)
    api_key_id = ma.fields.String(
        required=True,
        allow_none=True,
        metadata={
            "description": "The key whose daily quota and credits the widget's runs use "
            "(the key that created it); null once that key is deleted."
        },
    )
    embed_url = ma.fields.String(required=True, metadata={"format": "uri"})
    snippet = ma.fields.String(
        required=True,
        metadata={"description": "The HTML to paste into a page: a div and the loader script."},
    )
    created_at = ma.fields.DateTime(required=True)
    updated_at = ma.fields.DateTime(required=True)


class EmbedListSchema(ma.Schema):
    embeds = ma.fields.List(ma.fields.Nested(EmbedSchema), required=True)
    count = ma.fields.Integer(required=True)
