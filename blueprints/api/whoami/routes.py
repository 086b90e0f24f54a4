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
    @blp.response(200, WhoamiSchema)
    @blp.doc(security=API_KEY_SECURITY, responses=problem_responses(401, 429))
    def get(self):
        """Identify the calling key, its account, plan and today's usage (any valid key)."""
        context = authenticate(read_usage=True)
        now = clock.now()
        today = g.day_usage
        categories = load_catalogue().categories() if context.plan.api_access else []
        return {
            "key": {
                "id": context.key_id,
                "name": context.name,
                "hint": context.hint,
                "sandbox": context.sandbox,
                "created_at": context.created_at,
                "last_used_at": context.last_used_at,
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
                "date": now.date(),
                "calls_today": today.calls,
                "remaining_today": max(0, context.daily_quota - today.calls),
                "resets_at": clock.next_midnight(now),
                "credits_today": today.credits,
                "free_calls_remaining": usage.free_calls_remaining(context.free_calls_used),
            },
        }
