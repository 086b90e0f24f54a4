"""A request's admission: the per-minute hit and the run's quota in one Redis round trip,
with the pipeline's order of refusals kept (a caller over its limit gets 429 first)."""

import pytest
import redis
from sqlalchemy import func, select, update

from engines import EngineError
from extensions import db
from models import Account, Run, UsageEvent
from services import clock, keys, quota, usage
from services import runs as runs_module
from services.redis import redis_client
from tests.helpers import HAVE_REDIS, auth

DISPATCH = "/v1/tools/run"
RUN = {"slug": "word-counter", "input": "Flask is a small web framework."}

needs_redis = pytest.mark.skipif(not HAVE_REDIS, reason="needs Redis")


@pytest.fixture
def redis_commands(monkeypatch):
    """The Redis round trips the app makes from now on: each command by name (whichever
    way it is sent: through the client or on a connection of its own), a pipeline as one;
    not the handshake of a new connection."""
    sent: list[str] = []
    in_pipeline = []
    send_packed = redis.connection.AbstractConnection.send_packed_command
    execute = redis.client.Pipeline.execute

    def counted(self, command, *args, **options):
        if not in_pipeline:
            packed = b"".join(command) if isinstance(command, list) else command
            # RESP: *<count>\r\n$<length>\r\n<NAME>\r\n...
            name = bytes(packed).split(b"\r\n")[2].decode().upper()
            if name not in ("HELLO", "CLIENT", "SELECT", "AUTH"):
                sent.append(name)
        return send_packed(self, command, *args, **options)

    def counted_pipeline(self, *args, **options):
        sent.append("PIPELINE")
        in_pipeline.append(True)
        try:
            return execute(self, *args, **options)
        finally:
            in_pipeline.pop()

    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counted)
    monkeypatch.setattr(redis.client.Pipeline, "execute", counted_pipeline)
    return sent


def calls_today(app, raw_key_id: str) -> int:
    with app.app_context():
        return quota.store().usage(raw_key_id, clock.now()).calls


def key_id(client, raw: str) -> str:
    return client.get("/v1/public/whoami", headers=auth(raw)).get_json()["key"]["id"]


@needs_redis
def test_whoami_costs_one_redis_round_trip(client, make_key, redis_commands):
    raw = make_key("pro")
    client.get("/v1/public/whoami", headers=auth(raw))  # the key is resolved and cached
    redis_commands.clear()
    response = client.get("/v1/public/whoami", headers=auth(raw))
    assert response.status_code == 200
    assert redis_commands == ["EVALSHA"]


@needs_redis
@pytest.mark.parametrize("sandbox", [False, True], ids=["live", "sandbox"])
def test_an_inline_run_costs_two_redis_round_trips_and_its_batch_one(
    client, make_key, redis_commands, sandbox
):
    """The admission (per-minute hit and quota in one script) and the run's journal entry
    before the answer; the entries' deletion once their batch is committed is one call per
    batch (every request's, with the tests' delay of 0)."""
    raw = make_key("pro", sandbox=sandbox)
    assert client.post(DISPATCH, json=RUN, headers=auth(raw)).status_code == 200
    redis_commands.clear()
    response = client.post(DISPATCH, json=RUN, headers=auth(raw))
    assert response.status_code == 200, response.get_json()
    assert redis_commands == ["EVALSHA", "EVALSHA", "XDEL"]
    assert response.headers["X-RateLimit-Remaining"] == str(
        int(response.headers["X-RateLimit-Limit"]) - 2
    )


@needs_redis
def test_the_run_reserves_its_quota_in_the_same_call(app, client, make_key):
    raw = make_key("pro")
    kid = key_id(client, raw)
    assert client.post(DISPATCH, json=RUN, headers=auth(raw)).status_code == 200
    assert client.post(DISPATCH, json=RUN, headers=auth(raw)).status_code == 200
    assert calls_today(app, kid) == 2


@pytest.mark.parametrize(
    "body, refusal",
    [
        ({"slug": "no-such-tool", "input": "x"}, 404),
        ({"slug": "word-counter"}, 422),
        ({"slug": "word-counter", "input": "x", "colour": "red"}, 422),
    ],
    ids=["unknown-tool", "missing-input", "unknown-field"],
)
def test_a_refused_run_still_spends_its_minute_hit(client, make_key, body, refusal):
    raw = make_key("pro", per_minute_override=2)
    first = client.post(DISPATCH, json=body, headers=auth(raw))
    assert first.status_code == refusal
    assert first.headers["X-RateLimit-Remaining"] == "1"
    assert client.post(DISPATCH, json=body, headers=auth(raw)).status_code == refusal
    # Over the limit, the 429 comes before the refusal (the pipeline's order).
    third = client.post(DISPATCH, json=body, headers=auth(raw))
    assert third.status_code == 429
    assert third.get_json()["code"] == "rate_limited"


def test_a_caller_over_its_limit_reserves_no_quota(app, client, make_key):
    raw = make_key("pro", per_minute_override=2)
    kid = key_id(client, raw)  # spends the first hit
    assert client.post(DISPATCH, json=RUN, headers=auth(raw)).status_code == 200
    refused = client.post(DISPATCH, json=RUN, headers=auth(raw))
    assert refused.status_code == 429
    assert refused.get_json()["code"] == "rate_limited"
    assert calls_today(app, kid) == 1


def test_a_caller_over_its_limit_claims_no_idempotency_key(client, make_key):
    raw = make_key("pro", per_minute_override=1)
    headers = {**auth(raw), "Idempotency-Key": "order-1"}
    assert client.post(DISPATCH, json=RUN, headers=headers).status_code == 200
    refused = client.post(DISPATCH, json={**RUN, "input": "other"}, headers=headers)
    # Not 422 idempotency_key_reused: the limit is checked before the key is looked at.
    assert refused.status_code == 429
    assert refused.get_json()["code"] == "rate_limited"


def test_a_free_key_over_its_limit_gets_429_before_403(client, make_key):
    raw = make_key("free", per_minute_override=1)
    assert client.post(DISPATCH, json=RUN, headers=auth(raw)).status_code == 403
    assert client.post(DISPATCH, json=RUN, headers=auth(raw)).status_code == 429


def test_the_quota_refusal_follows_the_limit(app, client, make_key):
    raw = make_key("pro", daily_override=1)
    assert client.post(DISPATCH, json=RUN, headers=auth(raw)).status_code == 200
    refused = client.post(DISPATCH, json=RUN, headers=auth(raw))
    assert refused.status_code == 429
    assert refused.get_json()["code"] == "quota_exceeded"


# --- a paying key with room to spare: run first, admitted and journaled in one call -------


@pytest.fixture
def paying_key(app, make_key):
    """A pro key whose account has used its free calls (a free call is claimed in the
    database before the run is journaled, so those runs are always admitted first)."""

    def make(**fields) -> str:
        raw = make_key("pro", **fields)
        with app.app_context():
            account = keys.resolve(raw)
            db.session.execute(
                update(Account)
                .where(Account.id == account.account_id)
                .values(free_calls_used=usage.FREE_CALLS)
            )
            db.session.commit()
            keys.forget()
        return raw

    return make


def _rows(app, run_id: str) -> tuple[int, int]:
    with app.app_context():
        runs_rows = db.session.scalar(select(func.count()).where(Run.id == run_id))
        ledger = db.session.scalar(select(func.count()).where(UsageEvent.run_id == run_id))
        return runs_rows, ledger


def _left_in_redis(app) -> tuple[int, int]:
    with app.app_context():
        client = redis_client(app)
        return client.xlen(quota.JOURNAL), client.zcard(quota.INFLIGHT)


@needs_redis
def test_with_room_to_spare_a_run_is_admitted_and_journaled_in_one_round_trip(
    app, client, paying_key, redis_commands
):
    raw = paying_key(per_minute_override=1000)
    kid = key_id(client, raw)  # this process now knows the key's room under its limits
    redis_commands.clear()
    first = client.post(DISPATCH, json=RUN, headers=auth(raw))
    assert first.status_code == 200
    assert redis_commands.count("EVALSHA") == 2  # the day's room was not known yet
    redis_commands.clear()
    second = client.post(DISPATCH, json=RUN, headers=auth(raw))
    assert second.status_code == 200, second.get_json()
    assert redis_commands == ["EVALSHA", "XDEL"]
    body = second.get_json()
    assert body["credits"] == 1
    assert _rows(app, body["run_id"]) == (1, 1)
    assert (
        client.get(f"/v1/tools/run/{body['run_id']}/status", headers=auth(raw)).status_code == 200
    )
    assert calls_today(app, kid) == 2
    assert _left_in_redis(app) == (0, 0)
    with app.app_context():
        assert quota.store().usage(kid, clock.now()).credits == 2


@needs_redis
def test_near_its_limit_a_run_is_admitted_before_it_runs(app, client, paying_key, redis_commands):
    raw = paying_key(per_minute_override=30)  # never more than 32 left in a minute
    key_id(client, raw)
    for _ in range(3):
        redis_commands.clear()
        assert client.post(DISPATCH, json=RUN, headers=auth(raw)).status_code == 200
        assert redis_commands == ["EVALSHA", "EVALSHA", "XDEL"]


@needs_redis
def test_a_run_refused_after_it_ran_leaves_nothing_behind(app, client, paying_key, monkeypatch):
    """Another process used the day's quota meanwhile: the run ran, but is refused (429),
    and neither counted nor recorded nor journaled."""
    raw = paying_key(per_minute_override=1000, daily_override=1000)
    kid = key_id(client, raw)
    assert client.post(DISPATCH, json=RUN, headers=auth(raw)).status_code == 200
    with app.app_context():
        redis_client(app).hset(quota.usage_key(kid, clock.utc_day(clock.now())), "calls", 1000)
    ran = []
    real = runs_module.run_tool
    monkeypatch.setattr(runs_module, "run_tool", lambda *a: ran.append(1) or real(*a))
    refused = client.post(DISPATCH, json=RUN, headers=auth(raw))
    assert refused.status_code == 429
    assert refused.get_json()["code"] == "quota_exceeded"
    assert ran == [1]  # it ran first: the process still thought there was room
    assert calls_today(app, kid) == 1000
    assert _left_in_redis(app) == (0, 0)
    with app.app_context():
        assert db.session.scalar(select(func.count()).where(Run.api_key_id == kid)) == 1
    # Now the process knows: the next one is refused before it runs.
    ran.clear()
    assert client.post(DISPATCH, json=RUN, headers=auth(raw)).status_code == 429
    assert ran == []


@needs_redis
def test_a_run_that_fails_first_is_answered_as_one_admitted_first(
    app, client, paying_key, monkeypatch
):
    raw = paying_key(per_minute_override=1000)
    kid = key_id(client, raw)
    assert client.post(DISPATCH, json=RUN, headers=auth(raw)).status_code == 200

    def broken(*args):
        raise EngineError("The text could not be read.")

    monkeypatch.setattr(runs_module, "run_tool", broken)
    failed = client.post(DISPATCH, json=RUN, headers=auth(raw))
    assert failed.status_code == 422, failed.get_json()
    run_id = failed.get_json()["run_id"]
    assert _rows(app, run_id) == (1, 0)  # recorded as failed, not charged
    assert calls_today(app, kid) == 1
    assert _left_in_redis(app) == (0, 0)


@needs_redis
def test_a_file_making_tool_is_admitted_before_it_runs(app, client, paying_key, redis_commands):
    """A refused run would leave its files behind: such a tool never runs first."""
    raw = paying_key(per_minute_override=1000)
    key_id(client, raw)
    qr = {"slug": "qr-code-generator", "input": "https://example.com"}
    assert client.post(DISPATCH, json=qr, headers=auth(raw)).status_code == 200
    redis_commands.clear()
    response = client.post(DISPATCH, json=qr, headers=auth(raw))
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["output"]["image"]["url"]
    assert redis_commands == ["EVALSHA", "EVALSHA", "XDEL"]
