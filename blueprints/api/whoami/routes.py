from datetime import datetime

from flask import g
from flask.views import MethodView
from flask_smorest import Blueprint

from blueprints.api.docs import API_KEY_SECURITY, problem_responses
from blueprints.api.pipeline import authenticate
from blueprints.api.whoami.schemas import WhoamiSchema
from catalogue import load_catalogue
from services import clock, usage

blp = Blueprint("whoami", __name__, url_prefix="/v1/public", description="Identify a key.")


@blp.route("/whoami")
class Whoami(MethodView):
    # Answered as built, already JSON-ready: the schema documents it (schemathesis checks
    # answers against it) without a marshmallow pass on this hot path.
    @blp.alt_response(200, schema=WhoamiSchema, success=True)
    @blp.doc(operationId="whoami", security=API_KEY_SECURITY, responses=problem_responses(401, 429))
    def get(self):
        """Identify the calling key, its account, plan and today's usage (any valid key)."""
        context = authenticate(read_usage=True)
        now = clock.now()
        today = g._get_current_object().day_usage
        categories = load_catalogue().categories() if context.plan.api_access else []
        return {
            "key": {
                "id": context.key_id,
                "name": context.name,
                "hint": context.hint,
                "sandbox": context.sandbox,
                "created_at": context.created_at.isoformat(),
                "last_used_at": _iso(context.last_used_at),
            },
            "account": {"id": context.account_id, "name": context.account_name},
            "plan": {
                "name": context.plan.name,
                "api_access": context.plan.api_access,
                "daily_quota": context.daily_quota,
                "per_minute": context.per_minute,
                "categories": categories,
            },
            "usage": {
                "date": now.date().isoformat(),
                "calls_today": today.calls,
                "remaining_today": max(0, context.daily_quota - today.calls),
                "resets_at": clock.next_midnight(now).isoformat(),
                "credits_today": today.credits,
                "free_calls_remaining": usage.free_calls_remaining(context.free_calls_used),
            },
        }


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()
