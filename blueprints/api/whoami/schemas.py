import marshmallow as ma


class KeySchema(ma.Schema):
    id = ma.fields.String(required=True)
    name = ma.fields.String(required=True)
    hint = ma.fields.String(required=True, metadata={"example": "svc_AbCd…wxyz"})
    sandbox = ma.fields.Boolean(required=True)
    created_at = ma.fields.DateTime(required=True)
    last_used_at = ma.fields.DateTime(required=True, allow_none=True)


class AccountSchema(ma.Schema):
    id = ma.fields.Integer(required=True)
    name = ma.fields.String(required=True)


class PlanSchema(ma.Schema):
    name = ma.fields.String(required=True)
    api_access = ma.fields.Boolean(required=True)
    daily_quota = ma.fields.Integer(required=True, metadata={"description": "Calls per day."})
    per_minute = ma.fields.Integer(required=True, metadata={"description": "Requests/minute."})
    categories = ma.fields.List(
        ma.fields.String(),
        required=True,
        metadata={"description": "Tool categories this key can run."},
    )


class UsageSchema(ma.Schema):
    date = ma.fields.Date(required=True, metadata={"description": "The current UTC day."})
    calls_today = ma.fields.Integer(required=True)
    remaining_today = ma.fields.Integer(required=True)
    resets_at = ma.fields.DateTime(required=True, metadata={"description": "Next 00:00 UTC."})
    credits_today = ma.fields.Integer(required=True)
    free_calls_remaining = ma.fields.Integer(
        required=True, metadata={"description": "Of the account's first 100 free calls."}
    )


class WhoamiSchema(ma.Schema):
    key = ma.fields.Nested(KeySchema, required=True)
    account = ma.fields.Nested(AccountSchema, required=True)
    plan = ma.fields.Nested(PlanSchema, required=True)
    usage = ma.fields.Nested(UsageSchema, required=True)
