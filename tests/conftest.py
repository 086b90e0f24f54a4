"""Fixtures: the app on PostgreSQL and Redis (required in CI) and its settings, the embedded
default, keys, the fake model provider, workers and gunicorn."""

import itertools
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa
from flask_migrate import upgrade

from app import create_app
from engines.models import breaker
from extensions import db
from services import accounts, keys
from tests.fakes import FakeOpenAI
from tests.fakes.mailbox import Mailbox
from tests.fakes.redis_server import RedisServer
from tests.fakes.webhook_receiver import Receiver
from tests.helpers import (
    HAVE_PG,
    ROOT,
    app_config,
    clean,
    deployment_env,
    free_port,
    start_worker,
    stop_worker,
)

# The fake S3 bucket and the app storing files there (``s3``, ``s3_app``).
pytest_plugins = ("tests.fakes.s3_server",)


def _reset_schema(app) -> None:
    with app.app_context():
        if db.engine.dialect.name == "postgresql":
            with db.engine.begin() as connection:
                connection.execute(sa.text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
        upgrade()
        db.engine.dispose()


@pytest.fixture(scope="session")
def _schema():
    if HAVE_PG:
        _reset_schema(create_app(app_config()))


@pytest.fixture
def app_settings():
    """Settings of ``app`` over ``app_config()``'s: none here. A module whose app differs only
    in its settings overrides this fixture (which may take others, such as ``tmp_path``,
    ``fake_provider`` or ``redis_server``), not ``app``; ``client``, ``runner``, ``make_key``
    and ``mailbox`` follow (the processes of ``rq_worker`` and ``live_server`` read the
    environment instead). Redefine ``app`` only for another kind of app (another database,
    no Redis), and say why in its docstring."""
    return {}


@pytest.fixture
def app(_schema, app_settings):
    """The app on PostgreSQL and Redis (SQLite and memory where they are missing locally),
    with ``app_settings``."""
    app = create_app(app_config(**app_settings))
    if not HAVE_PG:
        with app.app_context():
            upgrade()
    yield from clean(app)


@pytest.fixture
def redis_server():
    """A private redis-server (``tests/fakes/redis_server.py``) for tests that stop, flush
    or replace Redis."""
    server = RedisServer()
    server.start()
    yield server
    if server.process.poll() is None:
        server.stop()


@pytest.fixture
def embedded_app(tmp_path):
    """The embedded default: a SQLite file and no Redis at all."""
    app = create_app(
        app_config(
            SQLALCHEMY_DATABASE_URI=f"sqlite:///{tmp_path / 'embedded.db'}",
            REDIS_URL=None,
            RATELIMIT_STORAGE_URI="memory://",
        )
    )
    with app.app_context():
        upgrade()
    yield from clean(app)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


_emails = itertools.count(1)


@pytest.fixture
def receiver():
    """A webhook receiver on loopback (tests/fakes/webhook_receiver.py), stopped after."""
    receiver = Receiver()
    yield receiver
    receiver.stop()


@pytest.fixture
def mailbox(app):
    """A real SMTP server on loopback that ``app`` sends its mails to (tests/fakes/mailbox.py)."""
    box = Mailbox()
    app.config["MAIL_URL"] = box.url
    yield box
    box.stop()


@pytest.fixture
def make_key(app):
    """Create an account on ``plan`` with one key; returns the raw key."""

    def make(plan: str = "pro", *, sandbox: bool = False, email: str | None = None, **fields):
        email = email or f"user{next(_emails)}@example.com"
        account = accounts.create_account(email, plan)
        key, raw = keys.create_key(account, "test key", sandbox=sandbox)
        for name, value in fields.items():
            setattr(key, name, value)
        db.session.commit()
        return raw

    return make


# --- the fake model provider ----------------------------------------------------------------


@pytest.fixture(scope="session")
def fake_provider():
    """The fake OpenAI-compatible model provider (tests/fakes/openai_server.py): one server
    for the test process, started when a test first needs it, and new to every test that
    uses it, itself or through a fixture of any scope (``_fresh_fake_provider``). Point an
    app at it with ``AI_BASE_URL=fake_provider.base_url`` among its settings (``app_settings``,
    ``embedded_app_at``, ``app_config``), worker processes with ``provider_in_env``; make it
    demand a key or know only some models with ``fake_provider_settings``."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def fake_provider_settings():
    """Attributes of ``fake_provider`` for each test, set after its reset: none here. A module
    overrides this (``{"api_key": "sk-test"}``, ``{"models": {...}}``, ``{"stream_pieces":
    20, "stream_seconds": 3.0}``); a test may also set them itself, and they do not outlive it."""
    return {}


@pytest.fixture(autouse=True)
def _fresh_fake_provider(request):
    """``fake_provider`` reset before a test that uses it (then given its
    ``fake_provider_settings``) and after: its requests, scripted answers and failures are the
    test's own, and the calls a test left held are let go. The process's circuit breakers are
    forgotten too: they are kept per base URL, and every test's provider has the same one (a
    test's failures would otherwise leave the next one's breaker open)."""
    if "fake_provider" not in request.fixturenames:
        yield
        return
    fake = request.getfixturevalue("fake_provider")
    fake.reset(**request.getfixturevalue("fake_provider_settings"))
    breaker.reset_breakers()
    yield
    fake.reset()
    breaker.reset_breakers()


@pytest.fixture
def provider_in_env(fake_provider, monkeypatch):
    """``fake_provider``, named in the environment (``AI_BASE_URL``) that the test app (ask
    for this fixture before ``app``) and the worker processes it starts (``deployment_env``,
    ``rq_worker``, ``live_server``) read."""
    monkeypatch.setenv("AI_BASE_URL", fake_provider.base_url)
    return fake_provider


@pytest.fixture
def rq_worker(app, tmp_path):
    """The Procfile's workers on the test database and Redis, as a deployment runs them: one
    of each kind (``worker`` and ``worker-io``); yields the compute worker's process."""
    log_path, io_log_path = tmp_path / "rq_worker.log", tmp_path / "rq_worker_io.log"
    process = start_worker(deployment_env(), log_path)
    io_process = start_worker(deployment_env(), io_log_path, kind="worker-io")
    yield process
    stop_worker(io_process, io_log_path)
    stop_worker(process, log_path)


@pytest.fixture
def live_server(app, tmp_path):
    """gunicorn with two worker processes on the test database and Redis; its log is
    ``gunicorn.log`` in the test's ``tmp_path``."""
    port = free_port()
    env = deployment_env()
    gunicorn = Path(sys.executable).with_name("gunicorn")
    log = (tmp_path / "gunicorn.log").open("w")
    process = subprocess.Popen(
        [str(gunicorn), "--workers", "2", "--bind", f"127.0.0.1:{port}", "wsgi:app"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            requests.get(base + "/v1/health", timeout=5)
            break
        except requests.RequestException:
            time.sleep(0.1)
    else:
        process.kill()
        process.wait()
        log.close()
        pytest.fail("gunicorn did not start")
    yield base
    process.terminate()
    process.wait(timeout=10)
    log.close()
