"""The application factory: a short list of register_* steps."""

import logging
import os
import re
import secrets
import time
from collections.abc import Callable, Mapping
from inspect import iscoroutinefunction
from types import MethodType
from typing import Any
from urllib.parse import parse_qsl

import orjson
from flask import Flask, Request, current_app, g, has_app_context, request
from flask.json.provider import DefaultJSONProvider
from sqlalchemy import event, exc
from werkzeug.datastructures import MultiDict
from werkzeug.exceptions import ClientDisconnected
from werkzeug.middleware.proxy_fix import ProxyFix
from werkzeug.sansio.utils import get_content_length
from werkzeug.utils import cached_property

import config
from extensions import db, limiter, login_manager, migrate


class PlatformRequest(Request):
    """Flask's request, reading a body of declared length in one read.

    werkzeug reads a body through a limiting stream, in chunks until the end, and finds
    the length through its header mapping: about 25 µs for a small JSON body here, a
    tenth of what an inline tool run adds to a request
    (docs/contributing/benchmarks/api-overhead.md). A body whose ``Content-Length`` is
    declared, within the limit and not chunked is read whole, straight from the server's
    input; anything else is left to werkzeug, which answers it as before.
    """

    @property
    def max_content_length(self) -> int | None:
        """Flask's (a limit set on this request, else ``MAX_CONTENT_LENGTH``), with one
        lookup of the app instead of an attribute read through its proxy (each builds and
        discards an AttributeError: blueprints/api/pipeline.py)."""
        if self._max_content_length is not None or not current_app:
            return super().max_content_length
        return current_app._get_current_object().config["MAX_CONTENT_LENGTH"]

    @max_content_length.setter
    def max_content_length(self, value: int | None) -> None:
        self._max_content_length = value

    @cached_property
    def args(self) -> MultiDict[str, str]:
        """werkzeug's, except for bytes of the query string sent raw rather than %-escaped
        that are not UTF-8 (``?q=\\x80``): werkzeug's ``args`` raised UnicodeDecodeError for
        them (a 500; it holds that such a client is wrong, pallets/werkzeug#3022). They stay
        %-escaped here, as werkzeug leaves an escape that is not UTF-8 (``?q=%80``)."""
        return self.parameter_storage_class(
            parse_qsl(
                self.query_string.decode(errors="werkzeug.url_quote"),
                keep_blank_values=True,
                errors="werkzeug.url_quote",
            )
        )

    @cached_property
    def content_length(self) -> int | None:
        environ = self.environ  # werkzeug's own parsing, without its header mapping
        return get_content_length(
            environ.get("CONTENT_LENGTH"), environ.get("HTTP_TRANSFER_ENCODING")
        )

    def get_data(
        self, cache: bool = True, as_text: bool = False, parse_form_data: bool = False
    ) -> Any:
        if getattr(self, "_cached_data", None) is None and not parse_form_data:
            data = self._read_declared_body()
            if data is not None:
                if cache:
                    self._cached_data = data  # where werkzeug (forms, get_json) looks
                return data.decode(errors="replace") if as_text else data
        return super().get_data(cache, as_text, parse_form_data)  # type: ignore[call-overload]

    def _read_declared_body(self) -> bytes | None:
        """The whole body, or None where werkzeug must read it (chunked, no or bad length,
        over the limit: it answers 413, or the stream was already opened)."""
        environ = self.environ
        declared = environ.get("CONTENT_LENGTH")
        if (
            declared is None
            or not (declared.isascii() and declared.isdigit())
            or len(declared) > 18  # int() refuses over 4,300 digits; werkzeug reads it as 0
            or "HTTP_TRANSFER_ENCODING" in environ
            or "stream" in self.__dict__
        ):
            return None
        length, limit = int(declared), self.max_content_length
        if limit is not None and length > limit:
            return None
        data = environ["wsgi.input"].read(length) if length else b""
        if len(data) != length:  # the client went away before sending it all
            raise ClientDisconnected()
        return data


class PlatformJSONProvider(DefaultJSONProvider):
    """Flask's JSON, with answers (``jsonify``, a view's dict) encoded by orjson.

    The stdlib encoder took a tenth of whoami's time in Python here. The answer is what
    Flask's provider writes (keys sorted, compact, a final newline; dates, UUIDs, dataclasses
    and ``__html__`` objects through Flask's own ``default``), except that text is UTF-8
    rather than ``\\u`` escapes, and a NaN or an infinity is ``null`` rather than a token JSON
    does not have. What orjson cannot encode (an integer wider than 64 bits, keys of mixed
    types) is left to the stdlib, as are debug mode's indented answers, ``dumps`` and all
    parsing (orjson would read a wide integer as a float).
    """

    _OPTIONS = (
        orjson.OPT_SORT_KEYS
        | orjson.OPT_NON_STR_KEYS
        | orjson.OPT_PASSTHROUGH_DATETIME
        | orjson.OPT_PASSTHROUGH_DATACLASS
        | orjson.OPT_APPEND_NEWLINE
    )

    def response(self, *args: Any, **kwargs: Any):
        if self.compact is False or (self.compact is None and self._app.debug):
            return super().response(*args, **kwargs)
        obj = self._prepare_response_obj(args, kwargs)
        try:
            encoded = orjson.dumps(obj, default=self.default, option=self._OPTIONS)
        except orjson.JSONEncodeError:
            return super().response(obj)
        return self._app.response_class(encoded, mimetype=self.mimetype)


class PlatformFlask(Flask):
    """Flask, remembering which hooks and views are coroutines.

    Flask asks ``ensure_sync`` about every hook and view on every request, and each answer
    takes an ``inspect`` call (a dozen a request here, about 25 µs in all). The answer never
    changes for a function, so it is kept (per function, not per bound method: MethodView
    binds a new view object on every request).
    """

    request_class = PlatformRequest
    json_provider_class = PlatformJSONProvider

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._coroutines: dict[Callable, bool] = {}

    def ensure_sync(self, func: Callable) -> Callable:
        # Not getattr(func, "__func__", func): a miss builds an AttributeError to discard.
        key = func.__func__ if type(func) is MethodType else func
        is_coroutine = self._coroutines.get(key)
        if is_coroutine is None:
            is_coroutine = self._coroutines[key] = iscoroutinefunction(func)
        return self.async_to_sync(func) if is_coroutine else func


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
    _init_limiter(app)
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


_HOOKS = ("before_request_funcs", "after_request_funcs", "teardown_request_funcs")


def _init_limiter(app: Flask) -> None:
    """Bind flask-limiter without its request hooks, unless default or application limits
    are configured.

    The hooks evaluate default, application and decorated limits and add their headers. This
    app sets none of those: the API spends each key's limit on the limiter's strategy and
    storage in its own pipeline (services/ratelimit.py) and writes its own headers. The hooks
    only cost time (about 60 µs a request, measured), so whatever ``init_app`` hooked in is
    taken out again.
    """
    before = {name: list(getattr(app, name).get(None, [])) for name in _HOOKS}
    limiter.init_app(app)
    if app.config.get("RATELIMIT_DEFAULT") or app.config.get("RATELIMIT_APPLICATION"):
        return
    for name in _HOOKS:
        getattr(app, name)[None] = before[name]


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
    hooks = app.after_request_funcs[None]
    update = login_manager._update_remember_cookie
    hooks[hooks.index(update)] = _site_only(update)


def _site_only(hook: Callable) -> Callable:
    from blueprints.api import is_api_request

    def on_site_pages(response):
        return response if is_api_request() else hook(response)

    return on_site_pages


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
    # On every request: the objects behind the proxies, taken once (blueprints/api/pipeline.py
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
