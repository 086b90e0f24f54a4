"""Every setting, declared once in ``SETTINGS``: its name, type, default and what it is for.

``Config`` holds the defaults (``app.config.from_object``), ``Config.from_env()`` reads each
setting from the environment variable of its own name (or those its ``env`` names:
``DATABASE_URL``, ``APP_ENV``) and ``settings()`` is both overlaid, the settings outside an app.
"""

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INSTANCE_DIR = Path(__file__).resolve().parent / "instance"


def _with_driver(url: str) -> str:
    """Heroku hands out postgres:// URLs; SQLAlchemy wants an explicit driver."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def _bool(text: str) -> bool:
    return text.strip().lower() in {"1", "true", "yes", "on"}


_PARSERS: dict[type, Callable[[str], Any]] = {str: str, int: int, float: float, bool: _bool}


@dataclass(frozen=True)
class Setting:
    """One setting of the app's config.

    It is read from the environment variable of its own name, or from those in ``env`` (the
    first one set wins), and parsed by its type; a variable set to the empty string is unset,
    and an unset setting keeps its default (None for an optional one). ``env=()`` marks a
    setting that is not read from the environment (a Flask or extension internal). ``text``:
    the variable's text is passed on stripped, unparsed, for the code that uses the setting to
    check (it refuses to start with a message naming the setting). ``parse`` replaces the
    type's parsing."""

    name: str
    type: type
    default: Any
    doc: str
    env: tuple[str, ...] | None = None
    text: bool = False
    parse: Callable[[str], Any] | None = None

    @property
    def variables(self) -> tuple[str, ...]:
        """The environment variables it is read from, in order (none: fixed)."""
        return (self.name,) if self.env is None else self.env

    def read(self, environ: Mapping[str, str]) -> Any:
        """Its value in ``environ``, or its default."""
        for variable in self.variables:
            value = environ.get(variable, "")
            if self.text:
                value = value.strip()
            if value:
                if self.text:
                    return value
                return (self.parse or _PARSERS[self.type])(value)
        return self.default


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "ENV_NAME",
        str,
        "production",
        "development, test or production",
        env=("APP_ENV", "FLASK_ENV"),
    ),
    Setting("SECRET_KEY", str, None, "signs sessions and tokens; required outside development"),
    Setting(
        "SQLALCHEMY_DATABASE_URI",
        str,
        f"sqlite:///{INSTANCE_DIR / 'platform.db'}",
        "the database (PostgreSQL; Heroku's postgres:// URLs work)",
        env=("DATABASE_URL",),
        parse=_with_driver,
    ),
    # Fixed: docs/workers.md counts connections by SQLAlchemy's default pool.
    Setting("SQLALCHEMY_ENGINE_OPTIONS", dict, {}, "SQLAlchemy's engine options", env=()),
    Setting(
        "DB_PING_AFTER_IDLE", float, 1.0, "a pooled connection idle this long is pinged (app.py)"
    ),
    Setting("REDIS_URL", str, None, "Redis (unset: limits and quota live in process memory)"),
    # A caller past REDIS_MAX_CONNECTIONS waits for one up to REDIS_POOL_TIMEOUT seconds, then
    # the request answers 503. A web process follows hundreds of run streams at once, and the
    # I/O worker runs 250 jobs.
    Setting(
        "REDIS_MAX_CONNECTIONS", int, 200, "Redis connections a process opens at once, at most"
    ),
    Setting("REDIS_POOL_TIMEOUT", float, 10.0, "seconds a caller waits for a Redis connection"),
    Setting("AI_BASE_URL", str, None, "the OpenAI-compatible model provider's API"),
    Setting("AI_API_KEY", str, None, "its key (local servers need none)"),
    Setting("AI_MODEL_CHAT", str, "gpt-4o-mini", "the provider's chat model"),
    Setting("AI_MODEL_IMAGE", str, "gpt-image-1", "the provider's image model"),
    Setting("AI_MODEL_TRANSCRIBE", str, "whisper-1", "the provider's transcription model"),
    Setting("AI_MODEL_SPEECH", str, "tts-1", "the provider's speech model"),
    Setting("AI_MODEL_EMBED", str, "text-embedding-3-small", "the provider's embedding model"),
    Setting(
        "AI_TIMEOUT_SECONDS", float, 60.0, "seconds per provider call attempt (connect: 10 at most)"
    ),
    Setting("LOCAL_LLM_GGUF", str, None, "the embedded text model's GGUF file (else the wheel's)"),
    Setting("LOCAL_LLM_SEED", int, None, "a fixed seed for its sampling (unset: random)"),
    Setting(
        "FETCH_ALLOW_PRIVATE", bool, False, "fetches of user-given URLs may reach private addresses"
    ),
    # Every absolute URL is built on PUBLIC_BASE_URL (services/urls.py); outside development
    # it is required and a request for any other host than it, TRUSTED_HOSTS and loopback is
    # a 400. TRUSTED_HOSTS stays text until ``services.urls.configure`` makes it a list.
    Setting("PUBLIC_BASE_URL", str, None, "the address clients reach the service at"),
    Setting(
        "TRUSTED_HOSTS", str, None, "other hosts requests may come to, comma-separated", text=True
    ),
    # Generated files (services.storage): "database" (the default) or "s3"; setting S3_BUCKET
    # alone selects "s3". Without S3 keys, boto3's own chain is used (AWS_* variables, a
    # profile, an instance role). S3_ENDPOINT_URL points at MinIO, R2, Wasabi and the like. A
    # slow or unreachable bucket answers 503 within about S3_MAX_ATTEMPTS x (connect or read
    # timeout) plus backoff. Their text is checked by ``services.storage.init_app``.
    Setting("STORAGE_BACKEND", str, None, "where files' bytes go: database or s3", text=True),
    Setting("S3_BUCKET", str, None, "the bucket's name", text=True),
    Setting(
        "S3_ENDPOINT_URL", str, None, "the provider's endpoint, for anything but AWS", text=True
    ),
    Setting(
        "S3_REGION",
        str,
        None,
        "the bucket's region (else boto3's, else us-east-1)",
        env=("S3_REGION", "AWS_REGION", "AWS_DEFAULT_REGION"),
        text=True,
    ),
    Setting("S3_ACCESS_KEY_ID", str, None, "the bucket's key id (with the secret)", text=True),
    Setting("S3_SECRET_ACCESS_KEY", str, None, "the bucket's secret key", text=True),
    Setting("S3_PREFIX", str, "", "a prefix for the objects' keys", text=True),
    Setting("S3_CONNECT_TIMEOUT", float, 3.0, "seconds to connect to the bucket", text=True),
    Setting("S3_READ_TIMEOUT", float, 15.0, "seconds to wait for the bucket's answer", text=True),
    Setting("S3_MAX_ATTEMPTS", int, 3, "attempts per bucket call, in all", text=True),
    # The MCP endpoint (docs/api/mcp.md): how long a tools/call waits for a queued run
    # before it answers the run's id (under the 60 s after which clients commonly give up,
    # and the web command's --timeout), and the browser origins it takes requests from
    # besides PUBLIC_BASE_URL's ("*": any).
    Setting("MCP_WAIT_SECONDS", float, 50.0, "seconds an MCP tool call waits for a queued run"),
    Setting(
        "MCP_ALLOWED_ORIGINS",
        str,
        None,
        "browser origins the MCP endpoint answers besides the site's, comma-separated",
    ),
    # Request bodies (docs/architecture/request-pipeline.md).
    Setting("MAX_TEXT_BODY", int, 1024 * 1024, "bytes of a text request's body, at most"),
    Setting("MAX_CONTENT_LENGTH", int, 25 * 1024 * 1024, "bytes of a body carrying files, at most"),
    # Revocation and plan changes reach every process within twice KEY_CACHE_SECONDS (the
    # promise is one second); a stale key is served a little longer while one request reloads
    # it (services/keys.py).
    Setting("KEY_CACHE_SECONDS", float, 0.5, "how long a resolved key is served from cache"),
    # services/recorder.py: inline runs are in the run journal until their rows are written.
    Setting(
        "RUN_RECORD_DELAY", float, 0.5, "inline runs' rows are written this often (0: at once)"
    ),
    Setting(
        "RUN_JOURNAL_GRACE_SECONDS",
        float,
        20.0,
        "a journaled run no process wrote this long is written by a worker",
    ),
    # Longer than any request may last: gunicorn's --timeout is 75.
    Setting(
        "RUN_INFLIGHT_GRACE_SECONDS",
        float,
        90.0,
        "an inline run's reservation not journaled this long is given back",
    ),
    # A submission takes milliseconds: its web process died in between.
    Setting(
        "RUN_SUBMIT_GRACE_SECONDS",
        float,
        20.0,
        "a queued run's reservation whose row was not committed this long is given back",
    ),
    # Stale runs (services/sweeper.py): a worker holds a lease on its job, renewed every third
    # of JOB_LEASE_SECONDS, so a killed worker is known once it lapses; runs younger than the
    # grace (and jobs past their deadline by less) are left alone.
    Setting("SWEEP_INTERVAL_SECONDS", float, 15.0, "every worker sweeps stale runs this often"),
    Setting("SWEEP_GRACE_SECONDS", float, 30.0, "runs younger than this are not swept"),
    Setting("JOB_LEASE_SECONDS", float, 30.0, "a killed worker's jobs are known lost after this"),
    Setting("RQ_MAINTENANCE_SECONDS", float, 60.0, "RQ's own registry cleanup runs this often"),
    # The I/O worker (``worker-io``, blueprints/cli/worker.py).
    Setting("IO_WORKER_CONCURRENCY", int, 250, "jobs in flight at once per process"),
    Setting(
        "IO_WORKER_STOP_GRACE_SECONDS",
        float,
        20.0,
        "how long a stop waits for them before leaving them to their leases",
    ),
    # flask-limiter. Fixed: the API spends each key's limits itself, on this strategy, and
    # writes its own headers (services/ratelimit.py).
    Setting("RATELIMIT_HEADERS_ENABLED", bool, False, "flask-limiter's headers", env=()),
    Setting("RATELIMIT_STRATEGY", str, "fixed-window", "flask-limiter's strategy", env=()),
    # flask-smorest / OpenAPI. Fixed: the API's published description and its address
    # (/v1/openapi.json), which clients are generated from.
    Setting("API_TITLE", str, "Tool and Workflow Platform API", "the API's title", env=()),
    Setting("API_VERSION", str, "v1", "the API's version", env=()),
    Setting("OPENAPI_VERSION", str, "3.1.0", "the OpenAPI version", env=()),
    Setting("OPENAPI_URL_PREFIX", str, "/v1", "where the description is served", env=()),
    Setting("OPENAPI_JSON_PATH", str, "openapi.json", "the description's path", env=()),
    # The site's web allowance (services/allowance.py): counted per salted hash of the
    # address (IPv6 by /64), whatever cookies say.
    Setting(
        "WEB_ADDRESS_DAILY_CAP", int, 20, "runs a day from one address; anonymous: the free plan's"
    ),
    # The site assistant (services/assistant/); limits in flask-limiter's syntax, per visitor
    # (its cookie) and per address (a salted hash).
    Setting("ASSISTANT_MAX_QUESTION_CHARS", int, 500, "the longest question"),
    Setting("ASSISTANT_VISITOR_LIMIT", str, "20/10 minutes", "questions one visitor may ask"),
    Setting("ASSISTANT_ADDRESS_LIMIT", str, "60/10 minutes", "questions one address may ask"),
    # Each email also has 3 an hour.
    Setting("SIGNUP_ADDRESS_LIMIT", str, "10/hour", "sign-ups from one client address"),
    # Never more than really are there: a client could then choose its own address.
    Setting(
        "TRUSTED_PROXIES",
        int,
        0,
        "proxies whose X-Forwarded-For is trusted (1 on Heroku; 0: the connection's address)",
    ),
    # Mail to people (services/mail.py).
    Setting(
        "MAIL_URL", str, None, "smtp://user:password@host:587, smtps://...:465 or log: (unset)"
    ),
    Setting("MAIL_FROM", str, "SVC <no-reply@localhost>", "the mails' sender"),
    # The site's session cookies (flask-login keeps the signed-in user there): HttpOnly,
    # SameSite=Lax, and Secure outside development and tests (create_app sets that). Fixed:
    # their protections are the site's security, not a deployment's choice.
    Setting("SESSION_COOKIE_NAME", str, "svc_session", "the session cookie", env=()),
    Setting("SESSION_COOKIE_HTTPONLY", bool, True, "not readable by scripts", env=()),
    Setting("SESSION_COOKIE_SAMESITE", str, "Lax", "not sent by other sites' requests", env=()),
    Setting("REMEMBER_COOKIE_NAME", str, "svc_remember", "the remember-me cookie", env=()),
    Setting("REMEMBER_COOKIE_HTTPONLY", bool, True, "not readable by scripts", env=()),
    Setting("REMEMBER_COOKIE_SAMESITE", str, "Lax", "not sent by other sites' requests", env=()),
    Setting("REMEMBER_COOKIE_DURATION", int, 30 * 86400, "seconds it lasts", env=()),
)


class Config:
    """Every setting's default (``app.config.from_object(Config)``)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> dict:
        """Every setting the environment may set: its value there, else its default."""
        environ = os.environ if environ is None else environ
        return {setting.name: setting.read(environ) for setting in SETTINGS if setting.variables}


for _setting in SETTINGS:
    setattr(Config, _setting.name, _setting.default)


def settings() -> dict:
    """``Config``'s defaults overlaid with the environment: the settings outside an app (those
    the engines read until ``create_app`` installs the app's, see ``app.engine_settings``)."""
    defaults = {setting.name: setting.default for setting in SETTINGS}
    return {**defaults, **Config.from_env()}


def markdown_table() -> str:
    """Every setting read from the environment as a Markdown table: the table of
    docs/operating/settings.md (tests/test_config.py checks that the page holds it)."""
    rows = ["| variable | default | what |", "|---|---|---|"]
    for setting in SETTINGS:
        if not setting.variables:
            continue
        names = " or ".join(f"`{variable}`" for variable in setting.variables)
        default = setting.default
        if setting.name == "SQLALCHEMY_DATABASE_URI":
            default = "SQLite under `instance/`"
        elif default is None or default == "":
            default = "unset"
        else:
            default = f"`{str(default).lower() if isinstance(default, bool) else default}`"
        rows.append(f"| {names} | {default} | {setting.doc} |")
    return "\n".join(rows) + "\n"
