import marshmallow as ma


class CheckSchema(ma.Schema):
    status = ma.fields.String(required=True, metadata={"enum": ["ok", "degraded", "error"]})
    latency_ms = ma.fields.Float()
    detail = ma.fields.String()


class HealthSchema(ma.Schema):
    status = ma.fields.String(required=True, metadata={"enum": ["ok", "degraded", "unavailable"]})
    checks = ma.fields.Dict(
        keys=ma.fields.String(), values=ma.fields.Nested(CheckSchema), required=True
    )


class ChatbotCheckSchema(ma.Schema):
    componentType = ma.fields.String(required=True)  # noqa: N815 (the draft's names)
    status = ma.fields.String(required=True, metadata={"enum": ["pass", "warn", "fail"]})
    observedValue = ma.fields.Raw(required=True)  # noqa: N815
    observedUnit = ma.fields.String()  # noqa: N815
    time = ma.fields.String(required=True, metadata={"format": "date-time"})


class ChatbotHealthSchema(ma.Schema):
    """``application/health+json`` (draft-inadarei-api-health-check): 200 for pass and
    warn, 503 for fail."""

    status = ma.fields.String(required=True, metadata={"enum": ["pass", "warn", "fail"]})
    version = ma.fields.String(required=True)
    releaseId = ma.fields.String(  # noqa: N815
        required=True, metadata={"description": "A hash of the documents the assistant searches."}
    )
    serviceId = ma.fields.String(required=True)  # noqa: N815
    description = ma.fields.String(required=True)
    checks = ma.fields.Dict(
        keys=ma.fields.String(),
        values=ma.fields.List(ma.fields.Nested(ChatbotCheckSchema)),
        required=True,
        metadata={
            "description": "`index:documents` (how many), `embedder:loaded`, `answer:mode` "
            "(provider or retrieval only: warn) and, with a provider, "
            "`provider:reachability` from a probe cached for a minute."
        },
    )
