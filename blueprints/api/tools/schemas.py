import marshmallow as ma

from catalogue import CATEGORIES
from models import PLAN_ORDER


class ToolQuerySchema(ma.Schema):
    category = ma.fields.String(validate=ma.validate.OneOf(CATEGORIES))
    plan = ma.fields.String(
        validate=ma.validate.OneOf(PLAN_ORDER),
        metadata={"description": "Only tools this plan can run."},
    )


class ToolSchema(ma.Schema):
    slug = ma.fields.String(required=True)
    name = ma.fields.String(required=True)
    category = ma.fields.String(required=True)
    summary = ma.fields.String(required=True)
    required_plan = ma.fields.String(required=True)
    credit_class = ma.fields.String(required=True)
    credits = ma.fields.Integer(required=True)
    queue = ma.fields.Boolean(required=True)
    primary_field = ma.fields.String(
        required=True, metadata={"description": "The field that `input` is an alias for."}
    )
    input_schema = ma.fields.Dict(required=True, metadata={"description": "JSON Schema."})
    output_schema = ma.fields.Dict(required=True, metadata={"description": "JSON Schema."})
    examples = ma.fields.List(ma.fields.Dict(), required=True)
    available = ma.fields.Boolean(required=True)
    unavailable_reason = ma.fields.String(required=True, allow_none=True)


class ToolListSchema(ma.Schema):
    tools = ma.fields.List(ma.fields.Nested(ToolSchema), required=True)
    count = ma.fields.Integer(required=True)
