"""Schemas shared by every API resource: problem details and the run result."""

import marshmallow as ma

from models.run import RUN_STATES


class ProblemSchema(ma.Schema):
    """RFC 9457 problem details, with this API's stable ``code`` and extensions."""

    type = ma.fields.String(required=True, metadata={"format": "uri"})
    title = ma.fields.String(required=True)
    status = ma.fields.Integer(required=True)
    detail = ma.fields.String(required=True)
    code = ma.fields.String(
        required=True, metadata={"description": "Stable snake_case identifier of the error."}
    )
    request_id = ma.fields.String(required=True)
    upgrade_url = ma.fields.String(metadata={"format": "uri"})
    required_plan = ma.fields.String()
    errors = ma.fields.Dict(
        keys=ma.fields.String(),
        values=ma.fields.List(ma.fields.String()),
        metadata={"description": "Field errors: field name to messages."},
    )
    limit = ma.fields.Integer()
    remaining = ma.fields.Integer()
    resets_at = ma.fields.DateTime()
    run_id = ma.fields.UUID(
        metadata={"description": "The run that failed, on a run's 422, 500 or 503."}
    )


class RunResultSchema(ma.Schema):
    """The result of a tool run."""

    run_id = ma.fields.UUID(required=True)
    tool = ma.fields.String(required=True, metadata={"description": "The tool's slug."})
    status = ma.fields.String(
        required=True,
        metadata={
            "enum": list(RUN_STATES),
            "description": "`pending` only for a workflow step still waiting for its inputs.",
        },
    )
    output = ma.fields.Dict(
        required=True,
        allow_none=True,
        metadata={
            "description": "Exactly the tool's output schema: the `ToolOutput_<slug>` "
            "component (see RunOutputByTool), also answered by GET /tools/{slug}."
        },
    )
    credits = ma.fields.Integer(required=True)
    duration_ms = ma.fields.Integer(required=True, allow_none=True)
    sandbox = ma.fields.Boolean(required=True)
    model = ma.fields.String(
        required=True,
        allow_none=True,
        metadata={
            "description": "The model that wrote the output (comma-separated when several "
            "did): the provider's model, or the embedded model's name when no provider "
            "answered; null for a tool that runs no model."
        },
    )
    quality_note = ma.fields.String(
        required=True,
        allow_none=True,
        metadata={
            "description": "A plain-language warning to show beside the output when the "
            "small model built into the service wrote it instead of an AI provider (its "
            "answers are checked, but weaker and can be wrong). Null when a provider's "
            "model wrote the output, or the tool runs no model."
        },
    )


class RunErrorSchema(ma.Schema):
    code = ma.fields.String(
        required=True,
        metadata={
            "description": "What failed: `input` (the run's answer was 422), `provider` "
            "(503 provider_unavailable), `model_unfit` (the embedded model's answers failed "
            "the tool's checks: 503 embedded_model_unfit) or `internal` (500).",
        },
    )
    message = ma.fields.String(required=True)
    retry_after = ma.fields.Integer()


class RunRecordSchema(RunResultSchema):
    """A tool run, finished or not."""

    error = ma.fields.Nested(RunErrorSchema, required=True, allow_none=True)
    created_at = ma.fields.DateTime(required=True)
    started_at = ma.fields.DateTime(required=True, allow_none=True)
    finished_at = ma.fields.DateTime(required=True, allow_none=True)
    status_url = ma.fields.String(required=True, metadata={"format": "uri"})
