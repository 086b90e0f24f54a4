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


class ComponentSchema(ma.Schema):
    status = ma.fields.String(required=True)


class ChatbotHealthSchema(ma.Schema):
    status = ma.fields.String(
        required=True, metadata={"enum": ["ok", "degraded", "not_configured"]}
    )
    detail = ma.fields.String(required=True)
    retriever = ma.fields.Nested(ComponentSchema, required=True)
    provider = ma.fields.Nested(ComponentSchema, required=True)
