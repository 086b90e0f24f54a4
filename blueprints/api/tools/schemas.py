import marshmallow as ma

from catalogue import CATEGORIES
from models import PLAN_ORDER

# Tools a search (``?q=``) answers at most, and its longest text: 300 characters fit a
# request line even %-escaped as 4-byte UTF-8 (gunicorn refuses lines over 4094 bytes).
SEARCH_LIMIT = 20
SEARCH_MAX_CHARS = 300


class ToolQuerySchema(ma.Schema):
    q = ma.fields.String(
        validate=ma.validate.Length(min=1, max=SEARCH_MAX_CHARS),
        metadata={
            "description": 'Search in plain words ("turn a podcast into show notes"): the best '
            f"{SEARCH_LIMIT} matches at most, best first, found as the site assistant finds "
            "them (BM25 and embeddings, a tool named exactly first); none when nothing "
            "matches well. Combines with `category` and `plan`."
        },
    )
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
    best_with_provider = ma.fields.Boolean(
        required=True,
        metadata={
            "description": "True when the tool runs here on the small embedded text model "
            "alone (no model provider is configured): its answers are checked and an unfit "
            "one is refused (503 embedded_model_unfit), but a provider gives better ones."
        },
    )


class ToolListSchema(ma.Schema):
    tools = ma.fields.List(ma.fields.Nested(ToolSchema), required=True)
    count = ma.fields.Integer(required=True)
