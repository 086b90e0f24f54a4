"""What tests share besides fixtures: the test databases and whether they are reachable
(required in CI), the app's test settings, an API key's headers, the embedded default at a
path, a bare app for the engines, emptying the tables, and starting and stopping the
Procfile's processes. Tests import these from here; the root ``conftest.py`` holds the
fixtures, built on them."""

import contextlib
import json
import os
import signal
import socket
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
import redis
import sqlalchemy as sa
from flask import Flask
from flask_migrate import upgrade

from app import create_app
from config import Config
from extensions import db
from services import clock, keys

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _for_this_process(pg_url: str, redis_url: str) -> tuple[str, str]:
    """The database and Redis database of this test process. `make test` runs the suite on
    several processes (pytest-xdist): the first uses the configured ones, the others each a
    database of its own (``<name>_gw<n>``, made when missing) and the Redis database
    ``n`` below the configured one, since the tests empty theirs."""
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    if worker == 0:
        return pg_url, redis_url
    pg = sa.engine.make_url(pg_url)
    own = f"{pg.database}_gw{worker}"
    engine = sa.create_engine(pg, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            known = connection.execute(
                sa.text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": own}
            ).first()
            if known is None:
                connection.execute(sa.text(f'CREATE DATABASE "{own}"'))
    except sa.exc.OperationalError:
        pass  # unreachable: the checks below say so, and skip (or refuse in CI)
    finally:
        engine.dispose()
    base, _, number = redis_url.rpartition("/")
    redis_db = (int(number or 0) - worker) % 16
    return pg.set(database=own).render_as_string(hide_password=False), f"{base}/{redis_db}"


PG_URL, REDIS_URL = _for_this_process(
    os.environ.get("TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"),
    os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15"),
)
ROOT = Path(__file__).resolve().parent.parent
TABLES = ("usage_events", "runs", "api_keys", "memberships", "users", "accounts")


def _pg_reachable() -> bool:
    engine = sa.create_engine(PG_URL)
    try:
        with engine.connect() as connection:
            connection.execute(sa.text("SELECT 1"))
        return True
    except Exception:
        return False
    finally:
        engine.dispose()


def _redis_reachable() -> bool:
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1)
    try:
        return client.ping()
    except Exception:
        return False
    finally:
        client.close()


HAVE_PG = _pg_reachable()
HAVE_REDIS = _redis_reachable()

if IN_CI and not (HAVE_PG and HAVE_REDIS):
    raise pytest.UsageError(
        f"CI needs PostgreSQL ({PG_URL}: {'ok' if HAVE_PG else 'unreachable'}) and Redis "
        f"({REDIS_URL}: {'ok' if HAVE_REDIS else 'unreachable'}); refusing to skip their tests."
    )

needs_redis = pytest.mark.skipif(not HAVE_REDIS, reason="Redis is not reachable")
needs_pg = pytest.mark.skipif(not HAVE_PG, reason="PostgreSQL is not reachable")


def app_config(**overrides) -> dict:
    settings = {
        "TESTING": True,
        "ENV_NAME": "test",
        "SECRET_KEY": "test-secret",
        "SQLALCHEMY_DATABASE_URI": PG_URL if HAVE_PG else "sqlite://",
        "REDIS_URL": REDIS_URL if HAVE_REDIS else None,
        "SERVER_NAME": "svc.test",
        "PREFERRED_URL_SCHEME": "https",
        "RUN_RECORD_DELAY": 0,
        # No periodic sweep thread per test app (tests that need it turn it on).
        "SWEEP_INTERVAL_SECONDS": 0,
    }
    settings["RATELIMIT_STORAGE_URI"] = (
        "svc+" + settings["REDIS_URL"] if settings["REDIS_URL"] else "memory://"
    )
    settings.update(overrides)
    return settings


@contextlib.contextmanager
def embedded_app_at(path, **settings):
    """An app on the embedded default (the SQLite file ``path``, no Redis) for a module's
    tests to share; ``settings`` override the test configuration."""
    app = create_app(
        app_config(
            REDIS_URL=None,
            RATELIMIT_STORAGE_URI="memory://",
            SQLALCHEMY_DATABASE_URI=f"sqlite:///{path}",
            **settings,
        )
    )
    with app.app_context():
        upgrade()
    try:
        yield app
    finally:
        keys.forget()
        with app.app_context():
            db.engine.dispose()


def bare_app(base_url: str | None = None, **settings) -> Flask:
    """A bare Flask app with ``config.Config``'s settings whose model provider is ``base_url``
    (None: none), with a 2 s provider timeout and then ``settings``: the engines' tests run
    in its app context (tests/engines/conftest.py has the engines read its settings)."""
    app = Flask(__name__)
    app.config.from_object(Config)
    app.config.update({"AI_BASE_URL": base_url, "AI_TIMEOUT_SECONDS": 2.0, **settings})
    return app


def clean(app):
    keys.forget()
    client = app.extensions.get("redis")
    if client is not None:
        client.flushdb()
    with app.app_context():
        yield app
        db.session.remove()
        if db.engine.dialect.name == "postgresql":
            db.session.execute(sa.text(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE"))
            db.session.commit()
        db.engine.dispose()
    clock.set_offset(timedelta(0))
    keys.forget()
    if client is not None:
        client.flushdb()


def auth(raw: str) -> dict:
    return {"X-SVC-API-Key": raw}


def stop_process_group(process: subprocess.Popen, timeout: float = 15) -> None:
    """Stop a process started in its own session, with its children: SIGTERM, then SIGKILL
    if it has not ended within ``timeout`` seconds."""
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def deployment_env() -> dict:
    """The environment of a real deployment on the test database and Redis."""
    return {
        **os.environ,
        "DATABASE_URL": PG_URL,
        "REDIS_URL": REDIS_URL,
        "SECRET_KEY": "test",
        "APP_ENV": "production",
        "PUBLIC_BASE_URL": os.environ.get("PUBLIC_BASE_URL", "http://localhost"),
    }


def start_worker(env: dict, log_path: Path | None = None, kind: str = "worker") -> subprocess.Popen:
    """The Procfile's ``kind`` of worker (``worker``: the compute queues; ``worker-io``: the
    I/O queues) with ``env``, in its own session (it forks RQ's scheduler, and a signal to
    the group reaches both); its output goes to ``log_path``."""
    from bench.harness import procfile_args

    args = procfile_args(kind, env)
    out = log_path.open("w") if log_path else subprocess.DEVNULL
    try:
        return subprocess.Popen(
            args,
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    finally:
        if log_path:
            out.close()


def stop_worker(process: subprocess.Popen, log_path: Path | None = None, timeout=20.0) -> None:
    """SIGTERM to a worker from ``start_worker`` and its scheduler, as a platform stops it.
    One that has not ended within ``timeout`` seconds is killed and fails the test with
    the end of its log: a worker must stop when asked."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            tail = log_path.read_text()[-6000:] if log_path else "(not logged)"
            pytest.fail(f"flask worker did not stop {timeout:.0f} s after SIGTERM; log:\n{tail}")
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # anything it left behind


def sse_events(body: str) -> list[tuple[str, str, dict]]:
    """(id, event, data) of each event of a server-sent events body (a run's events); comment
    lines left out."""
    found = []
    for block in body.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if line[:1] not in ":")
        if fields:
            found.append((fields["id"], fields["event"], json.loads(fields["data"])))
    return found
