"""Plans as data: read from the plans table, cached per process (they change by migration)."""

from dataclasses import dataclass

from flask import current_app

from extensions import db
from models import PLAN_ORDER, Plan
from services.urls import absolute_url_for


@dataclass(frozen=True)
class PlanInfo:
    name: str
    rank: int
    api_access: bool
    daily_quota: int
    per_minute: int
    seats: int
    web_runs_per_day: int | None
    price_usd_month: int

    def includes(self, required: str) -> bool:
        """True when this plan is ``required`` or above it."""
        return self.rank >= PLAN_ORDER.index(required)


class UnknownPlan(ValueError):
    pass


def all_plans() -> dict[str, PlanInfo]:
    cache = current_app.extensions.setdefault("plans", {})
    if not cache:
        for plan in db.session.scalars(db.select(Plan).order_by(Plan.rank)):
            cache[plan.name] = PlanInfo(
                name=plan.name,
                rank=plan.rank,
                api_access=plan.api_access,
                daily_quota=plan.daily_quota,
                per_minute=plan.per_minute,
                seats=plan.seats,
                web_runs_per_day=plan.web_runs_per_day,
                price_usd_month=plan.price_usd_month,
            )
    return cache


def get_plan(name: str) -> PlanInfo:
    plan = all_plans().get((name or "").lower())
    if plan is None:
        raise UnknownPlan(f"Unknown plan {name!r}; plans are: {', '.join(PLAN_ORDER)}.")
    return plan


def upgrade_url(required_plan: str) -> str:
    return absolute_url_for("site.pricing", plan=required_plan)
