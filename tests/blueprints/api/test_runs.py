"""Successful runs on both endpoints: the body, credits, the free calls, sandbox keys."""

import pytest

from extensions import db
from models import Account, Run, UsageEvent
from services import usage
from tests.blueprints.api.test_run_refusals import DISPATCH, SLUG_RUN, TEXT, TOOL
from tests.helpers import auth


@pytest.mark.parametrize(
    "path, body",
    [
        (SLUG_RUN, {"input": TEXT}),
        (DISPATCH, {"slug": TOOL, "input": TEXT}),
        (DISPATCH, {"slug": TOOL, "text": TEXT}),
    ],
    ids=["slug-in-path", "dispatcher-input-alias", "dispatcher-own-field"],
)
def test_run_returns_the_result_and_records_it(client, make_key, path, body):
    response = client.post(path, headers=auth(make_key()), json=body)
    assert response.status_code == 200, response.get_json()
    result = response.get_json()
    assert set(result) == {
        "run_id",
        "tool",
        "status",
        "output",
        "credits",
        "duration_ms",
        "sandbox",
        "model",
        "quality_note",
    }
    assert result["tool"] == TOOL and result["status"] == "succeeded"
    assert result["sandbox"] is False
    assert result["model"] is None and result["quality_note"] is None  # no model: no note
    assert result["output"]["words"] == 11
    run = db.session.get(Run, result["run_id"])
    assert run.status == "succeeded" and run.output == result["output"]
    assert run.input["text"] == TEXT


def test_first_100_calls_are_free_then_credits_are_charged(client, make_key):
    raw = make_key()
    account = db.session.scalar(db.select(Account))
    account.free_calls_used = usage.FREE_CALLS - 1
    db.session.commit()
    from services import keys

    keys.forget()
    first = client.post(SLUG_RUN, headers=auth(raw), json={"input": TEXT}).get_json()
    keys.forget()
    second = client.post(SLUG_RUN, headers=auth(raw), json={"input": TEXT}).get_json()
    assert (first["credits"], second["credits"]) == (0, 1)
    ledger = db.session.scalars(db.select(UsageEvent).order_by(UsageEvent.id)).all()
    assert [(e.credits, e.free_call, e.tool_slug) for e in ledger] == [
        (0, True, TOOL),
        (1, False, TOOL),
    ]
    keys.forget()
    who = client.get("/v1/public/whoami", headers=auth(raw)).get_json()
    assert who["usage"]["credits_today"] == 1
    assert who["usage"]["calls_today"] == 2
    assert who["usage"]["free_calls_remaining"] == 0


def test_free_calls_are_counted_per_account_never_over_100(client, make_key):
    raw = make_key()
    for _ in range(3):
        assert (
            client.post(SLUG_RUN, headers=auth(raw), json={"input": TEXT}).get_json()["credits"]
            == 0
        )
    assert db.session.scalar(db.select(Account.free_calls_used)) == 3


def test_sandbox_key_returns_the_sample_without_quota_or_credits(client, make_key):
    raw = make_key("pro", sandbox=True, daily_override=0)
    from catalogue import load_catalogue

    expected = load_catalogue().get(TOOL).sample_output()
    for _ in range(3):
        response = client.post(SLUG_RUN, headers=auth(raw), json={"input": "anything at all"})
        assert response.status_code == 200, response.get_json()
        result = response.get_json()
        assert result["sandbox"] is True and result["credits"] == 0
        assert result["output"] == expected
    assert db.session.scalar(db.select(db.func.count(UsageEvent.id))) == 0
    assert "day" not in response.headers["RateLimit-Policy"]


def test_sandbox_key_still_obeys_plan_checks(client, make_key):
    raw = make_key("free", sandbox=True)
    assert client.post(SLUG_RUN, headers=auth(raw), json={"input": TEXT}).status_code == 402


def test_engine_input_error_is_422_and_the_run_is_recorded_failed(client, make_key, monkeypatch):
    from engines import EngineError

    def refuse(tool, inputs):
        raise EngineError("Line 1: unexpected token.")

    monkeypatch.setattr("services.runs.run_tool", refuse)
    response = client.post(SLUG_RUN, headers=auth(make_key()), json={"input": TEXT})
    assert response.status_code == 422
    run = db.session.get(Run, response.get_json()["run_id"])
    assert run.status == "failed" and run.error["message"] == "Line 1: unexpected token."
    assert run.credits == 0


def test_unexpected_engine_crash_is_a_500_problem_without_details(client, make_key, monkeypatch):
    def crash(tool, inputs):
        raise RuntimeError("secret internal path /srv/x")

    monkeypatch.setattr("services.runs.run_tool", crash)
    response = client.post(SLUG_RUN, headers=auth(make_key()), json={"input": TEXT})
    assert response.status_code == 500
    assert response.mimetype == "application/problem+json"
    assert "secret" not in response.get_data(as_text=True)
    assert response.get_json()["code"] == "internal_error"
