"""keys set-webhook and keys rotate-webhook-secret, as docs/operating/operators.md documents
them."""

import pytest
from standardwebhooks import Webhook

from extensions import db
from models import ApiKey
from services import webhooks


@pytest.fixture
def key(runner):
    runner.invoke(args=["accounts", "create", "ops@example.com", "--plan", "pro"])
    runner.invoke(args=["keys", "create", "ops@example.com"])
    return db.session.scalar(db.select(ApiKey))


@pytest.fixture
def receiver(app, receiver):
    """The shared loopback receiver, which this app may deliver to."""
    app.config["FETCH_ALLOW_PRIVATE"] = True
    return receiver


def _last_line(output: str) -> str:
    return output.strip().splitlines()[-1]


def test_set_webhook_prints_a_new_webhooks_secret_alone_on_the_last_line(runner, key, receiver):
    result = runner.invoke(args=["keys", "set-webhook", key.hint, "--url", receiver.url])
    assert result.exit_code == 0, result.output
    secret = _last_line(result.output)
    db.session.refresh(key)
    assert key.webhook_url == receiver.url and secret == key.webhook_secret
    assert secret.startswith("whsec_")
    Webhook(secret)  # a valid Standard Webhooks secret
    # Changing the URL keeps the secret and does not print it.
    moved = runner.invoke(args=["keys", "set-webhook", key.id, "--url", receiver.url + "/v2"])
    assert moved.exit_code == 0 and secret not in moved.output


def test_rotate_prints_the_new_secret_last(runner, key, receiver):
    runner.invoke(args=["keys", "set-webhook", key.id, "--url", receiver.url])
    old = key.webhook_secret
    result = runner.invoke(args=["keys", "rotate-webhook-secret", key.hint])
    assert result.exit_code == 0, result.output
    db.session.refresh(key)
    assert _last_line(result.output) == key.webhook_secret != old


def test_clear_removes_the_webhook_and_reenables_a_disabled_one(runner, key, receiver):
    runner.invoke(args=["keys", "set-webhook", key.id, "--url", receiver.url])
    key.webhook_disabled_at = key.created_at
    db.session.commit()
    result = runner.invoke(args=["keys", "set-webhook", key.id, "--clear"])
    assert result.exit_code == 0 and "no webhook" in result.output
    db.session.refresh(key)
    assert webhooks.describe(key)["status"] == "not_set"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--url", "http://127.0.0.1:9000/hooks"], "loopback address"),
        (["--url", "ftp://example.com/"], "Only http and https"),
        ([], "Give either --url URL or --clear"),
        (["--url", "https://example.com/", "--clear"], "Give either --url URL or --clear"),
    ],
)
def test_refusals_are_clear_and_nonzero(runner, key, args, message):
    result = runner.invoke(args=["keys", "set-webhook", key.id, *args])
    assert result.exit_code != 0 and message in result.output
    db.session.refresh(key)
    assert key.webhook_url is None


def test_an_unknown_key_is_refused(runner):
    result = runner.invoke(args=["keys", "rotate-webhook-secret", "svc_nope…nope"])
    assert result.exit_code != 0 and "No key has the id or hint" in result.output
