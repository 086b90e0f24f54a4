import marshmallow as ma

from blueprints.api.schemas import RunErrorSchema


class FileLinkSchema(ma.Schema):
    """A generated file, as run outputs refer to it."""

    id = ma.fields.String(required=True)
    url = ma.fields.String(
        required=True, metadata={"format": "uri", "description": "GET it without an API key."}
    )
    content_type = ma.fields.String(required=True)
    size = ma.fields.Integer(required=True, metadata={"description": "Bytes."})
    filename = ma.fields.String(required=True, allow_none=True)


class ChapterSchema(ma.Schema):
    index = ma.fields.Integer(required=True, metadata={"description": "1 for the first."})
    title = ma.fields.String(required=True)
    audio = ma.fields.Nested(FileLinkSchema, required=True)
    duration_s = ma.fields.Float(required=True)
    characters = ma.fields.Integer(required=True)


class AudiobookSchema(ma.Schema):
    """An audiobook run: its state, and its chapters once it has succeeded."""

    run_id = ma.fields.UUID(required=True)
    status = ma.fields.String(
        required=True, metadata={"enum": ["queued", "running", "succeeded", "failed", "canceled"]}
    )
    title = ma.fields.String(required=True, allow_none=True)
    chapters = ma.fields.List(
        ma.fields.Nested(ChapterSchema),
        required=True,
        metadata={"description": "Empty until the run has succeeded."},
    )
    duration_s = ma.fields.Float(required=True, allow_none=True)
    voice = ma.fields.String(required=True, allow_none=True)
    format = ma.fields.String(required=True, allow_none=True)
    credits = ma.fields.Integer(required=True)
    sandbox = ma.fields.Boolean(required=True)
    error = ma.fields.Nested(RunErrorSchema, required=True, allow_none=True)
    created_at = ma.fields.DateTime(required=True)
    finished_at = ma.fields.DateTime(required=True, allow_none=True)
    status_url = ma.fields.String(
        required=True,
        metadata={"format": "uri", "description": "The run's record among tool runs."},
    )
