"""The application factory: a short list of register_* steps."""

import logging
import os
import re
import secrets
import time
from collections.abc import Mapping
from typing import Any

from flask import Flask, current_app, g, has_app_context, request
from sqlalchemy import event, exc
from werkzeug.middleware.proxy_fix import ProxyFix

import config
from extensions import db, limiter, login_manager, migrate
from speedups import PlatformFlask, hook_only_where, without_request_hooks


def create_app(test_config: dict | None = None) -> Flask:
    app = PlatformFlask(__name__, instance_path=str(config.INSTANCE_DIR))
    app.config.from_object(config.Config)
    app.config.update(config.Config.from_env())
    if test_config:
        app.config.update(test_config)
    register_secret_key(app)
    register_public_address(app)
    register_engine_settings()
    register_logging(app)
    register_extensions(app)
    register_catalogue(app)
    register_request_ids(app)
    register_jobs(app)
    register_blueprints(app)
    register_commands(app)
    return app


def register_secret_key(app: Flask) -> None:
    if app.config.get("SECRET_KEY"):
        return
    if app.config["ENV_NAME"] not in ("development", "test"):
        raise RuntimeError(
            "SECRET_KEY is not set. Set it in the environment (outside development it is "
            "required), e.g. SECRET_KEY=$(python -c 'import secrets;print(secrets.token_hex(32))')."
        )
    # Development keeps one generated key under instance/ so sessions survive restarts.
    key_file = config.INSTANCE_DIR / "secret_key"
    if not key_file.exists():
        config.INSTANCE_DIR.mkdir(parents=True, exist_ok=True)
        key_file.write_text(secrets.token_hex(32))
    app.config["SECRET_KEY"] = key_file.read_text().strip()


def register_public_address(app: Flask) -> None:
    """Every absolute URL is built on PUBLIC_BASE_URL (required outside development), and
    outside development a request for another host is refused (services/urls.py)."""
    from services import urls

    urls.configure(app.config)


def engine_settings() -> Mapping[str, Any]:
    """The settings the engines read: the current app's config; outside an app context (a
    script, a thread of its own), the defaults overlaid with the environment."""
    return current_app.config if has_app_context() else config.settings()


def register_engine_settings() -> None:
    """The engines take no Flask: they read their settings (the model provider's) from the
    source installed here."""
    from engines.models import providers

    providers.read_settings_from(engine_settings)


def register_logging(app: Flask) -> None:
    from services.keys import RedactSecrets

    if not app.debug and not logging.getLogger().handlers:
        logging.basicConfig(
            level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
    # The access logs write request lines whole: a key sent in the query string (refused,
    # 401) is not written with them.
    for name in ("werkzeug", "gunicorn.access"):
        logger = logging.getLogger(name)
        if not any(isinstance(known, RedactSecrets) for known in logger.filters):
            logger.addFilter(RedactSecrets())


def register_extensions(app: Flask) -> None:
    from services import allowance, idempotency, queue, quota, recorder, run_events, storage
    from services.ratelimit import storage_uri

    app.config.setdefault("RATELIMIT_STORAGE_URI", storage_uri(app.config.get("REDIS_URL")))
    if app.config["SQLALCHEMY_DATABASE_URI"].startswith("sqlite:///"):
        config.INSTANCE_DIR.mkdir(parents=True, exist_ok=True)
    db.init_app(app)
    with app.app_context():
        if app.config["SQLALCHEMY_DATABASE_URI"].startswith("sqlite"):
            event.listen(db.engine, "connect", _sqlite_pragmas)
        else:
            _ping_idle_connections(db.engine, app.config["DB_PING_AFTER_IDLE"])
    migrate.init_app(app, db, directory=str(config.INSTANCE_DIR.parent / "migrations"))
    _init_login(app)
    # flask-limiter without the request hooks it adds (speedups.py says why).
    without_request_hooks(app, limiter.init_app)
    quota.init_app(app)
    recorder.init_app(app)
    queue.init_app(app)
    run_events.init_app(app)
    idempotency.init_app(app)
    storage.init_app(app)  # refuses to start with incomplete bucket settings
    allowance.init_app(app)
    if app.config["TRUSTED_PROXIES"]:
        # The client address from X-Forwarded-For, as set by that many proxies and no more.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=app.config["TRUSTED_PROXIES"])


def _init_login(app: Flask) -> None:
    """flask-login, whose remember-me cookie is refreshed on site pages only.

    Its after-request hook reads the cookie session through three proxies on every request
    (about 3 µs); under /v1 there is no cookie session to read (StatelessApiSessions)."""
    login_manager.init_app(app)
    # A session whose address or browser changes is ended (its remember cookie too).
    login_manager.session_protection = "strong"
    login_manager.login_view = "site.login"
    secure = app.config["ENV_NAME"] not in ("development", "test")
    app.config["SESSION_COOKIE_SECURE"] = secure
    app.config["REMEMBER_COOKIE_SECURE"] = secure
    from blueprints.api import is_api_request

    hook_only_where(app, login_manager._update_remember_cookie, lambda: not is_api_request())


def _sqlite_pragmas(connection, _record) -> None:
    """The embedded default serves requests and its in-process worker from one SQLite file:
    WAL lets readers go on while one writes, and writers wait for each other a while."""
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _ping_idle_connections(engine, idle_seconds: float) -> None:
    """Check a pooled connection before use when it has been idle ``idle_seconds`` or more.

    SQLAlchemy's ``pool_pre_ping`` pings on every checkout, and a session checks a
    connection out for every transaction: a workflow step's claim and its end paid a round
    trip each for it. A connection back in use within the second gets no ping; one idle
    longer (a database restarted meanwhile, a connection dropped) is pinged, and replaced
    when the database has gone. A disconnect found by a statement invalidates the pool.
    """

    @event.listens_for(engine, "checkin")
    def _idle_from(_dbapi_connection, record) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping(dbapi_connection, record, _proxy) -> None:
        if time.monotonic() - record.info.get("idle_since", float("-inf")) < idle_seconds:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error as error:
            if engine.dialect.is_disconnect(error, dbapi_connection, None):
                raise exc.DisconnectionError(str(error)) from error
            raise


def register_catalogue(app: Flask) -> None:
    """Load and validate every tool and workflow now: a broken catalogue refuses to start."""
    from catalogue import load_catalogue, load_workflows

    app.extensions["catalogue"] = load_catalogue()
    app.extensions["workflows"] = load_workflows()


_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


def request_id_for(incoming: str | None) -> str:
    """A request's id: the caller's ``X-Request-Id`` when it is 1-128 of ``A-Za-z0-9._-``,
    else a new one (32 hex digits, as a UUID's)."""
    if incoming and _REQUEST_ID.fullmatch(incoming):  # match() lets "id\n" through
        return incoming
    return os.urandom(16).hex()


def register_request_ids(app: Flask) -> None:
    # On every request: the objects behind the proxies, taken once (blueprints/api/pipeline/keys.py
    # says why).
    @app.before_request
    def assign_request_id():
        incoming = request._get_current_object().environ.get("HTTP_X_REQUEST_ID")
        g._get_current_object().request_id = request_id_for(incoming)

    @app.after_request
    def add_request_id(response):
        # Nothing else writes it: add() skips set()'s search for an earlier value.
        response.headers.add("X-Request-Id", g._get_current_object().get("request_id", ""))
        return response


def register_jobs(app: Flask) -> None:
    from jobs import maintenance

    maintenance.init_app(app)  # the in-process queue starts it where it runs the jobs


def register_blueprints(app: Flask) -> None:
    from blueprints.api import register_api
    from blueprints.site import register_site, render_error

    register_api(app, error_page=render_error)
    register_site(app)


def register_commands(app: Flask) -> None:
    from blueprints.cli import register_cli

    register_cli(app)
