import marshmallow as ma

from services import storage


class StoredFileSchema(ma.Schema):
    """A generated file as run outputs refer to it: a URL on this service, not the bytes."""

    id = ma.fields.String(required=True)
    url = ma.fields.Function(
        lambda stored: storage.url_for(stored.id),
        required=True,
        metadata={"format": "uri", "description": "GET it without an API key."},
    )
    content_type = ma.fields.String(required=True)
    filename = ma.fields.String(required=True, allow_none=True)
    size = ma.fields.Integer(required=True, metadata={"description": "Bytes."})
    sha256 = ma.fields.String(required=True, metadata={"description": "Hex digest; the ETag."})
    created_at = ma.fields.DateTime(required=True)
