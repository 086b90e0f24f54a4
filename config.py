"""Settings from the environment, read once by ``create_app``."""

import os
from pathlib import Path

INSTANCE_DIR = Path(__file__).resolve().parent / "instance"


def _database_url() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url:
        return f"sqlite:///{INSTANCE_DIR / 'platform.db'}"
    # Heroku hands out postgres:// URLs; SQLAlchemy wants an explicit driver.
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def _bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _storage_settings() -> dict:
    """The file storage settings that are set, as text: ``services.storage.init_app`` checks
    them (and refuses to start with a message naming the setting)."""
    names = (
        "STORAGE_BACKEND",
        "S3_BUCKET",
        "S3_ENDPOINT_URL",
        "S3_REGION",
        "S3_ACCESS_KEY_ID",
        "S3_SECRET_ACCESS_KEY",
        "S3_PREFIX",
        "S3_CONNECT_TIMEOUT",
        "S3_READ_TIMEOUT",
        "S3_MAX_ATTEMPTS",
    )
    settings = {
        name: os.environ[name].strip() for name in names if os.environ.get(name, "").strip()
    }
    # The region boto3 itself would read, unless S3_REGION says otherwise.
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if "S3_REGION" not in settings and os.environ.get(name, "").strip():
            settings["S3_REGION"] = os.environ[name].strip()
    return settings


class Config:
    """Defaults for every environment; ``from_env`` overlays the environment."""

    ENV_NAME = "production"
    SECRET_KEY: str | None = None
    SQLALCHEMY_DATABASE_URI = ""
    SQLALCHEMY_ENGINE_OPTIONS: dict = {}
    # A pooled database connection idle this long is pinged before use (app.py).
    DB_PING_AFTER_IDLE = 1.0
    REDIS_URL: str | None = None
    # The most Redis connections a process opens at once (services/redis.py): a caller past
    # them waits for one up to REDIS_POOL_TIMEOUT seconds, then the request answers 503. A
    # web process follows hundreds of run streams at once, and the I/O worker runs 250 jobs.
    REDIS_MAX_CONNECTIONS = 200
    REDIS_POOL_TIMEOUT = 10.0
    AI_BASE_URL: str | None = None
    AI_API_KEY: str | None = None
    # One model name per capability of the OpenAI-compatible provider.
    AI_MODEL_CHAT = "gpt-4o-mini"
    AI_MODEL_IMAGE = "gpt-image-1"
    AI_MODEL_TRANSCRIBE = "whisper-1"
    AI_MODEL_SPEECH = "tts-1"
    AI_MODEL_EMBED = "text-embedding-3-small"
    AI_TIMEOUT_SECONDS = 60.0
    # The embedded text model: a GGUF file (default: the SmolLM2 wheel's own).
    LOCAL_LLM_GGUF: str | None = None
    # A fixed seed for its sampling: the same input gets the same answer (None: random).
    LOCAL_LLM_SEED: int | None = None
    # Outbound fetches of user-given URLs may reach private addresses (development only).
    FETCH_ALLOW_PRIVATE = False
    # The address clients reach the service at: every absolute URL it hands out is built on
    # it (services/urls.py); required outside development. TRUSTED_HOSTS (comma-separated)
    # names other hosts requests may come to (a second domain); any other Host is a 400.
    PUBLIC_BASE_URL: str | None = None
    TRUSTED_HOSTS: list[str] | None = None
    # Generated files (services/storage.py): "database" (the default) or "s3"; setting
    # S3_BUCKET alone selects "s3". Without S3 keys, boto3's own chain is used (AWS_* variables,
    # a profile, an instance role). S3_ENDPOINT_URL points at MinIO, R2, Wasabi and the like.
    STORAGE_BACKEND: str | None = None
    S3_BUCKET: str | None = None
    S3_ENDPOINT_URL: str | None = None
    S3_REGION: str | None = None
    S3_ACCESS_KEY_ID: str | None = None
    S3_SECRET_ACCESS_KEY: str | None = None
    S3_PREFIX = ""
    # Bounded: a slow or unreachable bucket answers 503 within about
    # S3_MAX_ATTEMPTS x (connect or read timeout) plus backoff.
    S3_CONNECT_TIMEOUT = 3.0
    S3_READ_TIMEOUT = 15.0
    S3_MAX_ATTEMPTS = 3
    # Request bodies: text requests and requests carrying files (DESIGN.md section 5).
    MAX_TEXT_BODY = 1024 * 1024
    MAX_CONTENT_LENGTH = 25 * 1024 * 1024
    # How long a resolved key is served from the process cache (a stale one a little longer,
    # while one request reloads it: services/keys.py); revocation and plan changes reach
    # every process within twice this time (the promise is one second).
    KEY_CACHE_SECONDS = 0.5
    # Inline runs' rows are written in batches this often (0: before the request ends); they
    # are in the run journal meanwhile (services/recorder.py).
    RUN_RECORD_DELAY = 0.5
    # A journaled run no process wrote within this many seconds is written by a worker's
    # maintenance (services/recorder.py).
    RUN_JOURNAL_GRACE_SECONDS = 20.0
    # An inline run's reservation not journaled within this many seconds (longer than any
    # request may last: gunicorn's --timeout is 75) is given back: its process died mid-run.
    RUN_INFLIGHT_GRACE_SECONDS = 90.0
    # A queued run's (or workflow run's) reservation whose row was not committed within this
    # many seconds (a submission takes milliseconds) is given back by a worker's sweep: its
    # web process died in between.
    RUN_SUBMIT_GRACE_SECONDS = 20.0
    # Stale runs (services/sweeper.py): every worker sweeps this often (0: never); a worker
    # holds a lease on its job, renewed every third of JOB_LEASE_SECONDS, so a killed worker
    # is known once it lapses; runs younger than the grace (and jobs past their deadline by
    # less) are left alone. RQ's own registry cleanup runs every RQ_MAINTENANCE_SECONDS.
    SWEEP_INTERVAL_SECONDS = 15.0
    SWEEP_GRACE_SECONDS = 30.0
    JOB_LEASE_SECONDS = 30.0
    RQ_MAINTENANCE_SECONDS = 60
    # The I/O worker (``worker-io``, blueprints/cli/worker.py): jobs in flight at once per
    # process, and how long a stop waits for them before leaving them to their leases.
    IO_WORKER_CONCURRENCY = 250
    IO_WORKER_STOP_GRACE_SECONDS = 20.0
    # flask-limiter
    RATELIMIT_HEADERS_ENABLED = False
    RATELIMIT_STRATEGY = "fixed-window"
    # flask-smorest / OpenAPI
    API_TITLE = "Tool and Workflow Platform API"
    API_VERSION = "v1"
    OPENAPI_VERSION = "3.1.0"
    OPENAPI_URL_PREFIX = "/v1"
    OPENAPI_JSON_PATH = "openapi.json"
    SEED_DEMO = False
    # The site's web allowance (services/allowance.py): runs a day from one address (a salted
    # hash of it, IPv6 by /64), whatever cookies say; anonymous visitors get the free plan's.
    WEB_ADDRESS_DAILY_CAP = 20
    # The site assistant (services/assistant/): the longest question, and how many questions
    # a visitor (its cookie) and an address (a salted hash) may ask (flask-limiter syntax).
    ASSISTANT_MAX_QUESTION_CHARS = 500
    ASSISTANT_VISITOR_LIMIT = "20/10 minutes"
    ASSISTANT_ADDRESS_LIMIT = "60/10 minutes"
    # Sign-ups from one client address (flask-limiter syntax); each email also has 3 an hour.
    SIGNUP_ADDRESS_LIMIT = "10/hour"
    # Proxies in front of the app whose X-Forwarded-For is trusted (1 on Heroku's router);
    # 0 takes the client address from the connection. Never more than really are there:
    # a client could then choose its own address.
    TRUSTED_PROXIES = 0
    # Mail to people (services/mail.py): smtp://user:password@host:587, smtps://...:465, or
    # "log:" (unset: the mail is written to the log, as the embedded default does).
    MAIL_URL: str | None = None
    MAIL_FROM = "SVC <no-reply@localhost>"
    # The site's session cookies (flask-login keeps the signed-in user there): HttpOnly,
    # SameSite=Lax, and Secure outside development and tests (create_app sets that).
    SESSION_COOKIE_NAME = "svc_session"
    SESSION_COOKIE_HTTPONLY = True
    SESSION_COOKIE_SAMESITE = "Lax"
    REMEMBER_COOKIE_NAME = "svc_remember"
    REMEMBER_COOKIE_HTTPONLY = True
    REMEMBER_COOKIE_SAMESITE = "Lax"
    REMEMBER_COOKIE_DURATION = 30 * 86400

    @classmethod
    def from_env(cls) -> dict:
        env_name = os.environ.get("APP_ENV") or os.environ.get("FLASK_ENV") or cls.ENV_NAME
        redis_url = os.environ.get("REDIS_URL") or None
        settings = {
            "ENV_NAME": env_name,
            "SECRET_KEY": os.environ.get("SECRET_KEY"),
            "SQLALCHEMY_DATABASE_URI": _database_url(),
            "REDIS_URL": redis_url,
            "AI_BASE_URL": os.environ.get("AI_BASE_URL") or None,
            "AI_API_KEY": os.environ.get("AI_API_KEY") or None,
            "LOCAL_LLM_GGUF": os.environ.get("LOCAL_LLM_GGUF") or None,
            "FETCH_ALLOW_PRIVATE": _bool("FETCH_ALLOW_PRIVATE"),
            **{
                name: os.environ[name]
                for name in (
                    "AI_MODEL_CHAT",
                    "AI_MODEL_IMAGE",
                    "AI_MODEL_TRANSCRIBE",
                    "AI_MODEL_SPEECH",
                    "AI_MODEL_EMBED",
                )
                if os.environ.get(name)
            },
            "PUBLIC_BASE_URL": os.environ.get("PUBLIC_BASE_URL") or None,
            **(
                {"TRUSTED_HOSTS": os.environ["TRUSTED_HOSTS"]}
                if os.environ.get("TRUSTED_HOSTS", "").strip()
                else {}
            ),
            "MAIL_URL": os.environ.get("MAIL_URL") or None,
            **({"MAIL_FROM": os.environ["MAIL_FROM"]} if os.environ.get("MAIL_FROM") else {}),
            **_storage_settings(),
            **{
                name: float(os.environ[name])
                for name in (
                    "SWEEP_INTERVAL_SECONDS",
                    "SWEEP_GRACE_SECONDS",
                    "JOB_LEASE_SECONDS",
                    "RQ_MAINTENANCE_SECONDS",
                    "RUN_RECORD_DELAY",
                    "RUN_JOURNAL_GRACE_SECONDS",
                    "RUN_INFLIGHT_GRACE_SECONDS",
                    "RUN_SUBMIT_GRACE_SECONDS",
                    "IO_WORKER_STOP_GRACE_SECONDS",
                    "REDIS_POOL_TIMEOUT",
                )
                if os.environ.get(name)
            },
            "SEED_DEMO": _bool("SEED_DEMO", default=env_name == "development"),
            **{
                name: int(os.environ[name])
                for name in (
                    "WEB_ADDRESS_DAILY_CAP",
                    "TRUSTED_PROXIES",
                    "LOCAL_LLM_SEED",
                    "ASSISTANT_MAX_QUESTION_CHARS",
                    "IO_WORKER_CONCURRENCY",
                    "REDIS_MAX_CONNECTIONS",
                )
                if os.environ.get(name)
            },
            **{
                name: os.environ[name]
                for name in (
                    "ASSISTANT_VISITOR_LIMIT",
                    "ASSISTANT_ADDRESS_LIMIT",
                    "SIGNUP_ADDRESS_LIMIT",
                )
                if os.environ.get(name)
            },
        }
        return settings


def settings() -> dict:
    """``Config``'s defaults overlaid with the environment: the settings outside an app (those
    the engines read until ``create_app`` installs the app's, see ``app.engine_settings``)."""
    defaults = {name: getattr(Config, name) for name in dir(Config) if name.isupper()}
    return {**defaults, **Config.from_env()}
