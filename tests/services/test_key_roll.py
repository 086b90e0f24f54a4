"""Rolling a key with the old one kept working for a while, the key limit, and suspended
accounts: the API honours a rolled key's expiry to the second, on the cached path too."""

import time
from datetime import timedelta

import pytest
import sqlalchemy as sa

from extensions import db
from models import Account, ApiKey
from services import accounts, clock, keys, webhooks
from tests.helpers import auth

WHOAMI = "/v1/public/whoami"


def _row(raw: str) -> ApiKey:
    return db.session.scalar(db.select(ApiKey).where(ApiKey.key_hash == keys.hash_key(raw)))


def _status(client, raw: str) -> int:
    return client.get(WHOAMI, headers=auth(raw)).status_code


def _advance_to(moment) -> None:
    """Move this process's clock so that ``clock.now()`` is ``moment``."""
    clock.set_offset(clock._offset + (moment - clock.now()))


def _account(plan: str = "pro") -> Account:
    account = accounts.create_account(f"roll{time.monotonic_ns()}@example.com", plan)
    db.session.commit()
    return account


# --- rolling ------------------------------------------------------------------------------


def test_a_roll_with_an_hour_of_overlap_keeps_both_keys_working_until_then(client, make_key):
    raw = make_key()
    old = _row(raw)
    new, new_raw = keys.regenerate_key(old, keep_old_for="1h")
    db.session.commit()
    assert old.revoked_at is None
    expires_at = clock.as_utc(old.expires_at)
    assert abs(expires_at - (clock.now() + timedelta(hours=1))) < timedelta(seconds=5)
    assert _status(client, raw) == 200
    assert _status(client, new_raw) == 200
    who = client.get(WHOAMI, headers=auth(new_raw)).get_json()
    assert who["key"]["name"] == "test key" and who["key"]["id"] == new.id


def test_the_old_key_answers_401_exactly_when_its_time_has_passed_on_the_cached_path(
    app, client, make_key
):
    app.config["KEY_CACHE_SECONDS"] = 60  # the entry cannot go stale during the test
    raw = make_key()
    old = _row(raw)
    _new, new_raw = keys.regenerate_key(old, keep_old_for="24h")
    db.session.commit()
    expires_at = clock.as_utc(old.expires_at)
    assert _status(client, raw) == 200  # now cached for KEY_CACHE_SECONDS
    cached = keys._cache[keys.hash_key(raw)][1]
    assert cached.expires_at == expires_at
    _advance_to(expires_at - timedelta(milliseconds=200))
    assert _status(client, raw) == 200
    _advance_to(expires_at)
    # Still the cached entry (no reload in between): the expiry is checked per request.
    assert keys._cache[keys.hash_key(raw)][1] is cached
    response = client.get(WHOAMI, headers=auth(raw))
    assert response.status_code == 401
    assert response.get_json()["code"] == "invalid_api_key"
    assert "expired" in response.get_json()["detail"]
    assert _status(client, new_raw) == 200
    # And from the database (another process, or after the cache entry went).
    keys.forget()
    assert keys.resolve(raw) is None
    assert keys.resolve(new_raw) is not None


def test_a_roll_made_by_another_process_reaches_this_one_within_a_second(app, client, make_key):
    raw = make_key()
    assert _status(client, raw) == 200  # this process caches the key, without an expiry
    moment = clock.now() + timedelta(hours=1)
    # Another process rolled it: only the database knows (this process's cache does not).
    db.session.execute(
        sa.update(ApiKey).where(ApiKey.key_hash == keys.hash_key(raw)).values(expires_at=moment)
    )
    db.session.commit()
    time.sleep(2 * app.config["KEY_CACHE_SECONDS"] + 0.05)
    assert _status(client, raw) == 200
    assert keys._cache[keys.hash_key(raw)][1].expires_at == clock.as_utc(moment)
    _advance_to(clock.as_utc(moment))
    assert _status(client, raw) == 401


def test_an_expiry_moved_into_the_past_ends_the_key_within_a_second(app, client, make_key):
    raw = make_key()
    old = _row(raw)
    keys.regenerate_key(old, keep_old_for="1h")
    db.session.commit()
    assert _status(client, raw) == 200
    old.expires_at = clock.now() - timedelta(seconds=1)
    db.session.commit()
    started = time.monotonic()
    while _status(client, raw) == 200:
        assert time.monotonic() - started < 2 * app.config["KEY_CACHE_SECONDS"] + 0.1
        time.sleep(0.02)
    assert time.monotonic() - started <= 1.0


def test_a_roll_now_revokes_the_old_key_at_once(client, make_key):
    raw = make_key()
    assert _status(client, raw) == 200
    old = _row(raw)
    _new, new_raw = keys.regenerate_key(old)
    db.session.commit()
    assert old.revoked_at is not None and old.expires_at is None
    assert _status(client, raw) == 401
    assert _status(client, new_raw) == 200


def test_a_roll_copies_name_sandbox_creator_webhook_and_limits(app, make_key):
    raw = make_key(sandbox=True, per_minute_override=7, daily_override=9)
    old = _row(raw)
    old.name = "production"
    old.created_by_user_id = old.account.memberships[0].user_id
    app.config["FETCH_ALLOW_PRIVATE"] = True
    webhooks.save(old, "http://127.0.0.1:8099/hooks")
    webhooks.rotate(old)
    db.session.commit()
    new, new_raw = keys.regenerate_key(old, keep_old_for="7d")
    db.session.commit()
    assert new_raw != raw and new.hint == keys.key_hint(new_raw)
    assert new.key_hash == keys.hash_key(new_raw) and new.key_hash != old.key_hash
    for field in (
        "account_id",
        "name",
        "sandbox",
        "created_by_user_id",
        "webhook_url",
        "webhook_secret",
        "webhook_previous_secret",
        "webhook_previous_secret_until",
        "per_minute_override",
        "daily_override",
    ):
        assert getattr(new, field) == getattr(old, field), field
    assert new.created_by_user_id is not None and new.webhook_previous_secret is not None
    assert new.expires_at is None and new.revoked_at is None
    assert abs(clock.as_utc(old.expires_at) - clock.now() - timedelta(days=7)) < timedelta(
        seconds=5
    )


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ("revoked", "no longer works"),
        ("rolled", "already rolled"),
        ("expired", "no longer works"),
    ],
)
def test_a_key_that_no_longer_works_or_was_rolled_cannot_be_rolled(make_key, state, message):
    key = _row(make_key())
    if state == "revoked":
        keys.revoke_key(key)
    elif state == "rolled":
        keys.regenerate_key(key, keep_old_for="1h")
    else:
        key.expires_at = clock.now() - timedelta(seconds=1)
    db.session.commit()
    count = db.session.scalar(sa.select(sa.func.count(ApiKey.id)))
    with pytest.raises(keys.KeyRefused, match=message):
        keys.regenerate_key(key, keep_old_for="now")
    db.session.rollback()
    assert db.session.scalar(sa.select(sa.func.count(ApiKey.id))) == count


def test_an_unknown_overlap_is_refused(make_key):
    key = _row(make_key())
    with pytest.raises(keys.KeyRefused, match="now, 1h, 24h, 7d"):
        keys.regenerate_key(key, keep_old_for="2h")
    assert key.revoked_at is None and key.expires_at is None


# --- the key limit ------------------------------------------------------------------------


@pytest.mark.parametrize("plan", ["free", "starter"])
def test_free_and_starter_accounts_hold_one_whoami_only_key(client, plan):
    account = _account(plan)
    _key, raw = keys.create_key(account, "check")
    db.session.commit()
    assert keys.key_limit(account) == 1
    with pytest.raises(keys.KeyRefused, match="one key, for whoami only"):
        keys.create_key(account, "second")
    assert _status(client, raw) == 200
    assert client.get("/v1/webhook", headers=auth(raw)).status_code == 403


def test_paid_accounts_hold_five_working_keys_per_seat(app):
    pro, business = _account("pro"), _account("business")
    assert keys.key_limit(pro) == 5 and keys.key_limit(business) == 50
    for n in range(5):
        keys.create_key(pro, f"key {n}")
    with pytest.raises(keys.KeyRefused, match=r"5 working keys.*5 per seat, 1 seat\)"):
        keys.create_key(pro, "sixth")


def test_a_rolled_key_counts_until_it_expires(make_key):
    raw = make_key()
    key = _row(raw)
    account = key.account
    for n in range(3):
        keys.create_key(account, f"key {n}")
    keys.regenerate_key(key, keep_old_for="1h")  # 4 + the old one = 5 working
    db.session.commit()
    assert keys.count_working(account.id) == 5
    with pytest.raises(keys.KeyRefused, match="counts until it expires"):
        keys.create_key(account, "sixth")
    _advance_to(clock.as_utc(key.expires_at))
    assert keys.count_working(account.id) == 4
    keys.create_key(account, "sixth")
    assert [k.name for k, _email in keys.working_keys(account.id)].count("test key") == 1


def test_at_the_limit_a_roll_may_not_keep_the_old_key_but_may_replace_it(make_key):
    raw = make_key()
    key = _row(raw)
    for n in range(4):
        keys.create_key(key.account, f"key {n}")
    db.session.commit()
    with pytest.raises(keys.KeyRefused, match="past this account's limit of 5"):
        keys.regenerate_key(key, keep_old_for="24h")
    assert key.expires_at is None and key.revoked_at is None
    new, _new_raw = keys.regenerate_key(key, keep_old_for="now")
    db.session.commit()
    assert key.revoked_at is not None and keys.count_working(key.account_id) == 5
    assert new.name == "test key"


@pytest.mark.parametrize(("name", "message"), [("  ", "Give the key a name"), ("x" * 101, "100")])
def test_a_key_needs_a_sensible_name(app, name, message):
    account = _account()
    with pytest.raises(keys.KeyRefused, match=message):
        keys.create_key(account, name)
    assert keys.count_working(account.id) == 0


def test_the_creator_is_recorded_and_listed(make_key):
    account = _account()
    owner = account.memberships[0].user
    key, _raw = keys.create_key(account, "mine", created_by=owner)
    db.session.commit()
    assert key.created_by_user_id == owner.id
    assert keys.working_keys(account.id) == [(key, owner.email)]


# --- suspension ---------------------------------------------------------------------------


def test_a_suspended_accounts_keys_answer_401_within_a_second(app, client, make_key):
    raw = make_key()
    assert _status(client, raw) == 200  # cached in this process
    account = _row(raw).account
    account.suspended_at = clock.now()
    db.session.commit()
    started = time.monotonic()
    while _status(client, raw) == 200:
        assert time.monotonic() - started < 2 * app.config["KEY_CACHE_SECONDS"] + 0.1
        time.sleep(0.02)
    assert time.monotonic() - started <= 1.0
    keys.forget()
    assert keys.resolve(raw) is None
    account.suspended_at = None
    db.session.commit()
    keys.forget()
    assert _status(client, raw) == 200


# --- the CLI ------------------------------------------------------------------------------


def test_cli_regenerate_keeps_the_old_key_for_the_chosen_time(client, runner, make_key):
    raw = make_key()
    key = _row(raw)
    result = runner.invoke(args=["keys", "regenerate", key.hint, "--keep-old-for", "24h"])
    assert result.exit_code == 0, result.output
    new_raw = result.output.strip().splitlines()[-1]
    assert keys.looks_like_key(new_raw) and new_raw != raw
    assert "keeps working until" in result.output
    assert _status(client, raw) == 200 and _status(client, new_raw) == 200
    db.session.expire_all()
    expires_at = clock.as_utc(_row(raw).expires_at)
    assert abs(expires_at - clock.now() - timedelta(hours=24)) < timedelta(seconds=5)
    again = runner.invoke(args=["keys", "regenerate", key.hint])
    assert again.exit_code == 1 and "already rolled" in again.output


def test_cli_regenerate_refuses_an_unknown_overlap(runner, make_key):
    key = _row(make_key())
    result = runner.invoke(args=["keys", "regenerate", key.hint, "--keep-old-for", "2d"])
    assert result.exit_code == 2
    assert "'2d' is not one of 'now', '1h', '24h', '7d'" in result.output
    db.session.expire_all()
    assert _row_by_id(key.id).expires_at is None


def _row_by_id(key_id: str) -> ApiKey:
    return db.session.get(ApiKey, key_id)
