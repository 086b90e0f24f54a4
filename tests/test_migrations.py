"""The schema comes only from migrations: they match the models exactly."""

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from extensions import db
from models import PLAN_ORDER, Plan


def test_migrations_match_the_models(app):
    with db.engine.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), db.metadata)
    assert diff == []


def test_plans_are_seeded_as_the_design_table(app):
    plans = {plan.name: plan for plan in db.session.scalars(db.select(Plan))}
    assert tuple(sorted(plans, key=lambda name: plans[name].rank)) == PLAN_ORDER
    assert [(plans[n].daily_quota, plans[n].per_minute, plans[n].seats) for n in PLAN_ORDER] == [
        (0, 30, 1),
        (0, 30, 1),
        (1000, 200, 1),
        (2000, 200, 1),
        (5000, 200, 10),
        (20000, 200, 25),
    ]
    assert plans["pro"].price_usd_month == 19
    assert [plans[n].api_access for n in PLAN_ORDER] == [False, False, True, True, True, True]
