import marshmallow as ma

from services.white_label import MAX_LOGO_BYTES, MAX_NAME, MAX_URL

_COLOR = {
    "pattern": "^#[0-9a-fA-F]{6}$",
    "description": "`#rrggbb`. Text is drawn on it in white or near-black (#111111), "
    "whichever contrasts more; a colour on which neither reaches 4.5:1 (WCAG AA) is refused "
    "with a 422 that gives the ratio. null removes it.",
}


class WhiteLabelUpdateSchema(ma.Schema):
    """What to change; a field left out is left as it is, null removes it."""

    class Meta:
        unknown = ma.RAISE

    brand_name = ma.fields.String(
        allow_none=True,
        validate=ma.validate.Length(max=MAX_NAME),
        metadata={
            "description": f"Shown beside the logo (at most {MAX_NAME} characters; spaces "
            "around it are trimmed, control characters refused). Always shown as text: "
            "markup in it is displayed, never run."
        },
    )
    logo = ma.fields.String(
        allow_none=True,
        metadata={
            "description": "A PNG, JPEG or WebP of at most "
            f"{MAX_LOGO_BYTES // 1024} KB as a `data:` URI (`data:image/png;base64,...`) "
            "or base64. It is decoded and encoded again (metadata removed, fitted into "
            "512 x 512 pixels) and served from this service at `logo_url`. SVG, a file "
            "that is not such an image and images of more than 16 million pixels are "
            "refused. null removes the logo."
        },
    )
    primary_color = ma.fields.String(allow_none=True, metadata=_COLOR)
    accent_color = ma.fields.String(allow_none=True, metadata=_COLOR)
    support_url = ma.fields.String(
        allow_none=True,
        validate=ma.validate.Length(max=MAX_URL),
        metadata={
            "format": "uri",
            "description": "An https URL of your support page, linked in the footer. "
            "null removes it.",
        },
    )
    hide_powered_by = ma.fields.Boolean(
        metadata={"description": 'true hides the "Powered by SVC" line.'}
    )


class WhiteLabelSchema(ma.Schema):
    """The account's brand, as its shared run pages and widgets show it."""

    brand_name = ma.fields.String(required=True, allow_none=True)
    logo_url = ma.fields.String(
        required=True,
        allow_none=True,
        metadata={
            "format": "uri",
            "description": "The re-encoded logo, served from this service (null: none).",
        },
    )
    primary_color = ma.fields.String(required=True, allow_none=True)
    accent_color = ma.fields.String(required=True, allow_none=True)
    support_url = ma.fields.String(required=True, allow_none=True, metadata={"format": "uri"})
    hide_powered_by = ma.fields.Boolean(required=True)
    stylesheet_url = ma.fields.String(
        required=True,
        allow_none=True,
        metadata={
            "format": "uri",
            "description": "The stylesheet that gives the colours as CSS variables "
            "(`--brand-primary`, `--brand-primary-text`, `--brand-accent`, "
            "`--brand-accent-text`); null without colours.",
        },
    )
    updated_at = ma.fields.DateTime(required=True, allow_none=True)
