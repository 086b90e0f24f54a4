"""services/embeds.py: the widget's token, its caps (Redis, and the embedded default's
counters) and its runs, charged as its key's API runs."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest

from catalogue import load_catalogue
from extensions import db
from models import Run, UsageDaily, UsageEvent
from services import accounts, clock, embed_caps, embeds, keys, quota
from services.recorder import recorder

_emails = itertools.count(1)


def widget(app, plan: str = "agency", free_calls_used: int = 100, **values) -> embeds.Live:
    account = accounts.create_account(f"svc-embeds{next(_emails)}@example.com", plan)
    account.free_calls_used = free_calls_used
    key, _raw = keys.create_key(account, "widgets")
    values = {"tool": "word-counter", "allowed_origins": ["https://a.example"], **values}
    embed = embeds.create(account, key.id, embeds.clean(values, account, creating=True))
    db.session.commit()
    return embeds.live(embed.public_id)


def run_once(live: embeds.Live, visitor: str = "visitor-1", text: str = "a b c"):
    ticket = embed_caps.admit(live.embed, visitor)
    stored = {"text": text}
    return embeds.run(live, stored, visitor, ticket)


def test_a_token_is_good_for_15_minutes_for_its_widget_and_public_id(app):
    live = widget(app)
    token = embeds.make_token(live.embed)
    embeds.check_token(live.embed, token)
    clock.set_offset(timedelta(minutes=14, seconds=50))
    embeds.check_token(live.embed, token)
    clock.set_offset(timedelta(minutes=15, seconds=5))
    with pytest.raises(embeds.TokenRefused) as refused:
        embeds.check_token(live.embed, token)
    assert refused.value.expired is True
    clock.set_offset(timedelta(0))
    other = widget(app)
    for bad in (None, "", "x" * 600, "forged.token", embeds.make_token(other.embed)):
        with pytest.raises(embeds.TokenRefused) as refused:
            embeds.check_token(live.embed, bad)
        assert refused.value.expired is False
    embeds.update(live.embed, {"rotate_public_id": True})
    with pytest.raises(embeds.TokenRefused):
        embeds.check_token(live.embed, token)


def test_a_run_is_charged_as_the_widgets_key_and_recorded_as_the_widgets(app):
    live = widget(app)
    result = run_once(live, text="one two three")
    assert result.run.output["words"] == 3
    recorder().flush()
    db.session.expire_all()
    run = db.session.get(Run, result.run.id)
    assert (run.source, run.embed_id, run.api_key_id) == ("embed", live.embed.id, live.key.key_id)
    assert (run.account_id, run.status, run.credits) == (live.embed.account_id, "succeeded", 1)
    assert run.web_address == "visitor-1"
    (event,) = db.session.scalars(db.select(UsageEvent).where(UsageEvent.run_id == run.id))
    assert (event.api_key_id, event.credits, event.free_call) == (live.key.key_id, 1, False)
    usage = quota.store().usage(live.key.key_id, clock.now())
    assert (usage.calls, usage.credits) == (1, 1)
    # The dashboard's rollup counts it as an API call of the widget's key.
    (rollup,) = db.session.scalars(
        db.select(UsageDaily).where(UsageDaily.account_id == live.embed.account_id)
    )
    assert (rollup.api_key_id, rollup.source, rollup.calls, rollup.credits) == (
        live.key.key_id, "api", 1, 1,
    )  # fmt: skip
    assert embeds.totals([live.embed.id])[live.embed.id] == (1, 1, 1)
    (today, *_rest) = embeds.daily_usage(live.embed.id)
    assert (today.day, today.runs, today.credits) == (clock.utc_day(), 1, 1)


def test_a_free_call_of_the_account_is_used_as_an_api_run_would(app):
    live = widget(app, free_calls_used=0)
    result = run_once(live)
    assert result.run.credits == 0
    recorder().flush()
    (event,) = db.session.scalars(db.select(UsageEvent).where(UsageEvent.run_id == result.run.id))
    assert event.free_call is True


def test_the_keys_daily_quota_refuses_and_gives_the_caps_back(app):
    live = widget(app)
    key = db.session.get(keys.ApiKey, live.key.key_id)
    key.daily_override = 1
    db.session.commit()
    live = embeds.live(live.embed.public_id)
    run_once(live)
    with pytest.raises(embed_caps.CapReached) as capped:
        run_once(live)
    assert capped.value.cap == "quota"
    assert quota.store().usage(live.key.key_id, clock.now()).calls == 1
    # The refused run was given back to the widget's day: one counted, not two.
    day = clock.utc_day()
    counted = embed_caps.allowance.store().get([f"embed:{day}:widget:{live.embed.id}"])
    assert counted == [1]


def test_a_failed_run_gives_its_caps_back_and_costs_nothing(app, monkeypatch):
    live = widget(app, per_visitor_daily=1)

    def broken(*args, **kwargs):
        raise RuntimeError("engine exploded")

    monkeypatch.setattr("services.runs.run_tool", broken)
    with pytest.raises(embeds.runs.RunFailed):
        run_once(live)
    monkeypatch.undo()
    run_once(live)  # the same visitor's one run of the day is still there
    assert quota.store().usage(live.key.key_id, clock.now()).calls == 1


@pytest.mark.parametrize("which", ["app", "embedded_app"])
def test_caps_per_visitor_and_per_day(request, which):
    app = request.getfixturevalue(which)
    live = widget(app, per_visitor_daily=2, daily=3, per_minute=100)
    run_once(live, "v1")
    run_once(live, "v1")
    with pytest.raises(embed_caps.CapReached) as capped:
        run_once(live, "v1")
    assert capped.value.cap == "per_visitor_daily"
    run_once(live, "v2")
    with pytest.raises(embed_caps.CapReached) as capped:
        run_once(live, "v3")
    assert capped.value.cap == "daily"
    assert capped.value.retry_after == clock.seconds_to_midnight()
    recorder().flush()
    assert len(db.session.scalars(db.select(Run).where(Run.embed_id == live.embed.id)).all()) == 3


@pytest.mark.parametrize("which", ["app", "embedded_app"])
def test_the_per_minute_cap(request, which):
    app = request.getfixturevalue(which)
    live = widget(app, per_minute=2)
    run_once(live, "v1")
    run_once(live, "v2")
    with pytest.raises(embed_caps.CapReached) as capped:
        run_once(live, "v3")
    assert capped.value.cap == "per_minute" and 1 <= capped.value.retry_after <= 60


def test_the_day_caps_are_counted_again_from_the_runs_when_redis_lost_them(app):
    live = widget(app, per_visitor_daily=2)
    run_once(live, "v1")
    run_once(live, "v1")
    recorder().flush()
    app.extensions["redis"].flushdb()  # Redis lost everything mid-day
    with pytest.raises(embed_caps.CapReached) as capped:
        run_once(live, "v1")
    assert capped.value.cap == "per_visitor_daily"


def test_only_enabled_agency_widgets_with_a_working_key_and_a_tool_are_live(app):
    live = widget(app)
    assert embeds.live(live.embed.public_id) is not None
    assert embeds.live("short") is None and embeds.live("x" * 44) is None
    embed, public_id = live.embed, live.embed.public_id
    embed.enabled = False
    db.session.commit()
    assert embeds.live(public_id) is None
    embed.enabled = True
    embed.tool_slug = "abandoned-cart-email-series"  # queued: shown, its runs queued
    db.session.commit()
    assert embeds.live(public_id) is not None
    embed.tool_slug = "no-such-tool"  # gone from the catalogue
    db.session.commit()
    assert embeds.live(public_id) is None


def test_every_tool_that_can_run_here_can_be_embedded(app):
    """Queued tools and tools that make files included: only a tool whose provider this
    deployment lacks is refused, with its tool page's reason."""
    catalogue = list(load_catalogue())
    refused = {tool.slug: embeds.embeddable_reason(tool) for tool in catalogue}
    assert {slug for slug, reason in refused.items() if reason} == {
        tool.slug for tool in catalogue if tool.unavailable_reason
    }
    embeddable = [tool for tool in catalogue if refused[tool.slug] is None]
    assert any(tool.queue for tool in embeddable) and any(t.makes_files for t in embeddable)
