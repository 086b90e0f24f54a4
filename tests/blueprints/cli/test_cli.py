"""The operator commands, used exactly as docs/operating/operators.md documents them."""

import pytest

from extensions import db
from models import Account, ApiKey
from services import keys
from tests.helpers import auth


def invoke(runner, *args):
    result = runner.invoke(args=list(args))
    return result


def test_create_account_and_key_prints_raw_key_last(runner, client):
    assert invoke(runner, "accounts", "create", "a@example.com", "--plan", "pro").exit_code == 0
    result = invoke(runner, "keys", "create", "a@example.com", "--name", "ci")
    assert result.exit_code == 0, result.output
    raw = result.output.strip().splitlines()[-1]
    assert keys.looks_like_key(raw)
    assert client.get("/v1/public/whoami", headers=auth(raw)).get_json()["key"]["name"] == "ci"


def test_sandbox_flag(runner, client):
    invoke(runner, "accounts", "create", "s@example.com", "--plan", "pro")
    raw = invoke(runner, "keys", "create", "s@example.com", "--sandbox").output.split()[-1]
    assert client.get("/v1/public/whoami", headers=auth(raw)).get_json()["key"]["sandbox"]


def test_set_plan_takes_effect(runner, client):
    invoke(runner, "accounts", "create", "p@example.com", "--plan", "free")
    raw = invoke(runner, "keys", "create", "p@example.com").output.split()[-1]
    path = "/v1/public/tools/word-counter/run"
    assert client.post(path, headers=auth(raw), json={"input": "a b"}).status_code == 402
    assert invoke(runner, "accounts", "set-plan", "p@example.com", "pro").exit_code == 0
    assert client.post(path, headers=auth(raw), json={"input": "a b"}).status_code == 200


def test_set_limits_overrides_the_plan(runner, client):
    invoke(runner, "accounts", "create", "l@example.com", "--plan", "pro")
    raw = invoke(runner, "keys", "create", "l@example.com").output.split()[-1]
    key = db.session.scalar(db.select(ApiKey))
    result = invoke(runner, "keys", "set-limits", key.hint, "--per-minute", "2", "--daily", "9")
    assert result.exit_code == 0, result.output
    plan = client.get("/v1/public/whoami", headers=auth(raw)).get_json()["plan"]
    assert (plan["per_minute"], plan["daily_quota"]) == (2, 9)


@pytest.mark.parametrize(
    "args, message",
    [
        (("accounts", "create", "x@example.com", "--plan", "platinum"), "platinum"),
        (("accounts", "create", "not-an-email", "--plan", "pro"), "not an email"),
        (("accounts", "set-plan", "nobody@example.com", "pro"), "No account"),
        (("keys", "create", "nobody@example.com"), "No account"),
        (("keys", "revoke", "svc_zzzz…zzzz"), "No key"),
        (("keys", "set-limits", "svc_zzzz…zzzz"), "Give --per-minute"),
    ],
)
def test_refusals_are_clear_and_nonzero(runner, args, message):
    result = invoke(runner, *args)
    assert result.exit_code != 0
    assert message in result.output


def test_duplicate_account_is_refused(runner):
    invoke(runner, "accounts", "create", "d@example.com", "--plan", "pro")
    result = invoke(runner, "accounts", "create", "D@example.com", "--plan", "pro")
    assert result.exit_code != 0 and "already exists" in result.output
    assert db.session.scalar(db.select(db.func.count(Account.id))) == 1


def test_active_keys_are_capped_at_five_per_seat(runner):
    invoke(runner, "accounts", "create", "c@example.com", "--plan", "pro")
    for _ in range(5):
        assert invoke(runner, "keys", "create", "c@example.com").exit_code == 0
    result = invoke(runner, "keys", "create", "c@example.com")
    assert result.exit_code != 0 and "Revoke one first" in result.output


def test_demo_command_creates_once(runner, client):
    first = invoke(runner, "accounts", "demo")
    raw = first.output.strip().splitlines()[-1]
    assert client.get("/v1/public/whoami", headers=auth(raw)).get_json()["plan"]["name"] == "pro"
    second = invoke(runner, "accounts", "demo")
    assert second.exit_code == 0 and "exists" in second.output
