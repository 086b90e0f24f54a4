"""An agency's embeddable widgets (docs/architecture/agency.md): one validation,
create / update / rotate / delete, the signed token a widget's page carries, its caps, and
its runs, for the API (``/v1/embeds``) and the site (``/account/embeds/``, ``/embed/<id>``)
alike.

A widget is bound to one tool of the catalogue that the account's plan includes and that can
run on this deployment. Its runs go through a key of its account kept on the server
(``embeds.api_key_id``) exactly as that key's API runs do (services/runs.py: quota, credits,
ledger, run record), with ``source`` embed and ``embed_id`` set: a light tool in the request,
a queued tool as a queued run whose page the widget shows (progress, then the output) under
a token bound to the widget and that run (``make_token(embed, run_id)``: no cookie in a
third-party iframe). Files a run makes are served as the API serves them (``/v1/files/<id>``,
the id a capability). Before a run, its caps are counted (services/embed_caps.py).
"""

from __future__ import annotations

import ipaddress
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

from flask import current_app
from itsdangerous import BadSignature, SignatureExpired, TimestampSigner, URLSafeTimedSerializer
from markupsafe import escape
from sqlalchemy import func, select

from catalogue import Tool, load_catalogue
from extensions import db
from models import Account, ApiKey, Embed, Run
from services import clock, keys, runs, submissions, urls
from services.embed_caps import CapReached, Ticket, day_bounds, release
from services.keys import KeyContext
from services.plans import get_plan

REQUIRED_PLAN = "agency"
MAX_ORIGINS = 20
MAX_NAME_LENGTH = 100
MAX_ORIGIN_LENGTH = 255
# The caps a widget may set, and its defaults (the model's).
CAPS = {
    "per_minute": (1, 600, 10),
    "per_visitor_daily": (1, 10_000, 20),
    "daily": (1, 100_000, 500),
}
CAP_LABELS = {
    "per_minute": "Runs per minute",
    "per_visitor_daily": "Runs per visitor per day",
    "daily": "Runs per day",
}
FIELDS = {"name", "tool", "allowed_origins", "enabled", "rotate_public_id", *CAPS}
# How long a widget page's token authorises a run.
TOKEN_SECONDS = 15 * 60
# How long a run's token shows that run (each status the widget polls carries a fresh one).
RUN_TOKEN_SECONDS = 60 * 60
_TOKEN_SALT = "svc-embed-run"
_PUBLIC_ID = re.compile(r"[A-Za-z0-9_-]{16,43}")
_LABEL = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class EmbedRefused(Exception):
    """Field errors (``errors``: field → messages) of a widget's values."""

    def __init__(self, errors: dict[str, list[str]]):
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))
        self.errors = errors


class TokenRefused(Exception):
    """The page's token is not valid (``expired``: it was, 15 minutes ago)."""

    def __init__(self, expired: bool):
        super().__init__("expired" if expired else "invalid")
        self.expired = expired


# --- validation ---------------------------------------------------------------------------


def normalise_origin(value: object) -> str:
    """``value`` as an exact origin, ``scheme://host[:port]`` (scheme and host in lower case,
    the scheme's default port left out); ValueError saying why it is not one."""
    if not isinstance(value, str):
        raise ValueError("Must be a string such as https://example.com.")
    text = value.strip()
    if not text:
        raise ValueError("Must not be empty: write an origin such as https://example.com.")
    if len(text) > MAX_ORIGIN_LENGTH:
        raise ValueError(f"An origin is at most {MAX_ORIGIN_LENGTH} characters.")
    if "*" in text:
        raise ValueError("Wildcards are not allowed: list each origin that may show the widget.")
    if any(character.isspace() or character in "\\;,'\"" for character in text):
        raise ValueError("An origin has no spaces, quotes, commas, semicolons or backslashes.")
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not text.lower().startswith(f"{scheme}://"):
        raise ValueError(
            "Use http:// or https:// followed by the site's host, e.g. https://example.com."
        )
    if "@" in parts.netloc:
        raise ValueError("An origin has no user name or password.")
    if parts.path not in ("", "/") or parts.query or parts.fragment or "?" in text or "#" in text:
        raise ValueError("An origin has no path, query or fragment: just scheme://host[:port].")
    try:
        port = parts.port
    except ValueError:
        raise ValueError("The port must be a number from 1 to 65535.") from None
    if port == 0:
        raise ValueError("The port must be a number from 1 to 65535.")
    host = _host(parts.hostname or "")
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def _host(hostname: str) -> str:
    """The host as an origin writes it: a lowercase name (IDNA for other scripts) or an IP
    address (IPv6 in brackets); ValueError otherwise."""
    if not hostname:
        raise ValueError("The origin needs a host, e.g. https://example.com.")
    try:
        address = ipaddress.ip_address(hostname)
    except ValueError:
        pass
    else:
        return f"[{address.compressed}]" if address.version == 6 else address.compressed
    try:
        name = hostname.encode("idna").decode("ascii").lower()
    except UnicodeError:
        raise ValueError("The host is not a valid domain name.") from None
    if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in name.split(".")):
        raise ValueError("The host is not a valid domain name.")
    return name


def embeddable_reason(tool: Tool) -> str | None:
    """Why ``tool`` cannot be embedded (None: it can): only when it cannot run on this
    deployment (a provider it needs is not configured), as its tool page says. Queued tools
    and tools that make files are embedded like the others."""
    reason = tool.unavailable_reason
    if reason is not None:
        return f"This tool cannot run on this deployment: {reason}"
    return None


def _cap(name: str, value: object) -> int:
    low, high, _default = CAPS[name]
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"Must be a whole number from {low} to {high:,}.")
    return value


def clean(values: dict, account: Account, *, creating: bool) -> dict:
    """The widget's fields from ``values`` (what the API's body or the account page's form
    sent, typed or as text), checked: EmbedRefused with every field's messages. Keys not
    sent are left out (an update changes only what it names); creating needs ``tool`` and
    ``allowed_origins``."""
    errors: dict[str, list[str]] = {}
    cleaned: dict = {}
    for name in sorted(set(values) - FIELDS):
        errors[name] = ["Unknown field."]
    if creating:
        for name in ("tool", "allowed_origins"):
            if name not in values:
                errors[name] = ["Missing required field."]
    elif "tool" in values:
        errors["tool"] = ["A widget's tool cannot change: create another widget."]
    if creating and "rotate_public_id" in values:
        errors["rotate_public_id"] = ["Only an update rotates the public id."]

    if creating and "tool" in values:
        try:
            cleaned["tool"] = _tool(values["tool"], account).slug
        except ValueError as error:
            errors["tool"] = [str(error)]
    if "name" in values:
        name = values["name"]
        if name is None:
            cleaned["name"] = None
        elif not isinstance(name, str):
            errors["name"] = ["Must be a string."]
        elif len(name.strip()) > MAX_NAME_LENGTH:
            errors["name"] = [f"At most {MAX_NAME_LENGTH} characters."]
        else:
            cleaned["name"] = name.strip() or None
    if "allowed_origins" in values:
        origins, origin_errors = _origins(values["allowed_origins"])
        if origin_errors:
            errors["allowed_origins"] = origin_errors
        else:
            cleaned["allowed_origins"] = origins
    for name in CAPS:
        if name in values:
            try:
                cleaned[name] = _cap(name, values[name])
            except ValueError as error:
                errors[name] = [str(error)]
    for name in ("enabled", "rotate_public_id"):
        if name in values:
            if not isinstance(values[name], bool):
                errors.setdefault(name, ["Must be true or false."])
            else:
                cleaned[name] = values[name]
    if errors:
        raise EmbedRefused(errors)
    return cleaned


def _tool(slug: object, account: Account) -> Tool:
    if not isinstance(slug, str) or not slug.strip():
        raise ValueError("Name the tool by its slug, e.g. word-counter.")
    tool = load_catalogue().get(slug.strip())
    if tool is None:
        raise ValueError(f"There is no tool with the slug {slug.strip()[:100]!r}.")
    if not get_plan(account.plan_name).includes(tool.required_plan):
        raise ValueError(f"This tool needs the {tool.required_plan} plan.")
    reason = embeddable_reason(tool)
    if reason is not None:
        raise ValueError(reason)
    return tool


def _origins(value: object) -> tuple[list[str], list[str]]:
    """The origins, normalised and without repeats, or the messages of the bad ones."""
    if not isinstance(value, list):
        return [], ['Must be a list of origins such as ["https://example.com"].']
    if len(value) > MAX_ORIGINS:
        return [], [f"At most {MAX_ORIGINS} origins."]
    origins, errors = [], []
    for item in value:
        try:
            origin = normalise_origin(item)
        except ValueError as error:
            shown = item[:80] if isinstance(item, str) else repr(item)[:80]
            errors.append(f"{shown}: {error}")
            continue
        if origin not in origins:
            origins.append(origin)
    return origins, errors


# --- the widgets of an account ------------------------------------------------------------


def new_public_id() -> str:
    return secrets.token_urlsafe(32)


def create(account: Account, key_id: str, values: dict) -> Embed:
    """A new widget of ``account`` from checked ``values`` (``clean``), its runs through the
    key ``key_id``; added and flushed, the caller commits."""
    tool = load_catalogue().get(values["tool"])
    embed = Embed(
        account_id=account.id,
        api_key_id=key_id,
        tool_slug=tool.slug,
        name=values.get("name") or tool.name,
        public_id=new_public_id(),
        allowed_origins=values["allowed_origins"],
        **{name: values.get(name, default) for name, (_, _, default) in CAPS.items()},
        enabled=values.get("enabled", True),
    )
    db.session.add(embed)
    db.session.flush()
    return embed


def update(embed: Embed, values: dict) -> Embed:
    """Apply checked ``values`` (``clean``); ``rotate_public_id`` gives it a new public id,
    which ends every page and token of the old one. The caller commits."""
    if "name" in values:
        tool = load_catalogue().get(embed.tool_slug)
        embed.name = values["name"] or (tool.name if tool is not None else embed.tool_slug)
    for name in ("allowed_origins", "enabled", *CAPS):
        if name in values:
            setattr(embed, name, values[name])
    if values.get("rotate_public_id"):
        embed.public_id = new_public_id()
    embed.updated_at = clock.now()
    db.session.flush()
    return embed


def set_key(embed: Embed, key_id: str) -> None:
    embed.api_key_id = key_id
    embed.updated_at = clock.now()


def delete(embed: Embed) -> None:
    """Delete the widget; its runs stay (their ``embed_id`` becomes null)."""
    db.session.delete(embed)
    db.session.flush()


def find(account_id: int, embed_id: object) -> Embed | None:
    """The account's widget ``embed_id`` (None for another account's: never revealed)."""
    if not isinstance(embed_id, str) or len(embed_id) > 36:
        return None
    embed = db.session.get(Embed, embed_id)
    return embed if embed is not None and embed.account_id == account_id else None


def of_account(account_id: int) -> list[Embed]:
    return list(
        db.session.scalars(
            select(Embed).where(Embed.account_id == account_id).order_by(Embed.created_at, Embed.id)
        )
    )


def run_keys(account_id: int) -> list[ApiKey]:
    """The keys a member may give a widget on the account page: working, not sandbox."""
    return [key for key, _email in keys.working_keys(account_id) if not key.sandbox]


def embed_url(embed: Embed) -> str:
    return urls.absolute(f"/embed/{embed.public_id}")


def loader_url() -> str:
    return urls.absolute("/embed/v1/loader.js")


def snippet(embed: Embed) -> str:
    """The two lines a page adds to show the widget."""
    tool = load_catalogue().get(embed.tool_slug)
    title = escape(tool.name if tool is not None else embed.name)
    return (
        f'<div data-svc-embed="{embed.public_id}" data-title="{title}"></div>\n'
        f'<script src="{loader_url()}" async></script>'
    )


def describe(embed: Embed) -> dict:
    """The widget as the API answers it."""
    return {
        "id": embed.id,
        "public_id": embed.public_id,
        "name": embed.name,
        "tool": embed.tool_slug,
        "allowed_origins": list(embed.allowed_origins or []),
        "per_minute": embed.per_minute,
        "per_visitor_daily": embed.per_visitor_daily,
        "daily": embed.daily,
        "enabled": embed.enabled,
        "api_key_id": embed.api_key_id,
        "embed_url": embed_url(embed),
        "snippet": snippet(embed),
        "created_at": clock.as_utc(embed.created_at),
        "updated_at": clock.as_utc(embed.updated_at),
    }


def frame_ancestors(embed: Embed | None) -> str:
    """The CSP ``frame-ancestors`` source list: exactly the allowed origins, or 'none'."""
    origins = list(embed.allowed_origins or []) if embed is not None else []
    return " ".join(origins) if origins else "'none'"


# --- the widget's page --------------------------------------------------------------------


@dataclass(frozen=True)
class Live:
    """A widget that may be shown and run: its tool and the key its runs go through."""

    embed: Embed
    tool: Tool
    key: KeyContext


def live(public_id: str) -> Live | None:
    """The widget with this public id if it can be shown: it exists and is enabled, its
    account is on the agency plan and not suspended, its key works and its tool exists.
    None otherwise, whatever the reason (a page cannot tell them apart)."""
    if not _PUBLIC_ID.fullmatch(public_id or ""):
        return None
    embed = db.session.scalar(select(Embed).where(Embed.public_id == public_id))
    if embed is None or not embed.enabled:
        return None
    context = keys.resolve_id(embed.api_key_id)
    if context is None or context.account_id != embed.account_id:
        return None
    if not context.plan.includes(REQUIRED_PLAN):
        return None
    tool = load_catalogue().get(embed.tool_slug)
    if tool is None:
        return None
    # A tool whose provider went away stays shown: its page says it cannot run now.
    return Live(embed, tool, context)


class _ClockSigner(TimestampSigner):
    """Signs with the service's clock (services/clock.py), which tests can move."""

    def get_timestamp(self) -> int:
        return int(clock.now().timestamp())


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(
        current_app.config["SECRET_KEY"], salt=_TOKEN_SALT, signer=_ClockSigner
    )


def make_token(embed: Embed, run_id: str | None = None) -> str:
    """A token for a page of the widget: it authorises runs for 15 minutes, while the widget
    keeps this public id. With ``run_id``: a run's token instead, which shows that run of
    the widget (its status, output and files, and cancels it) for an hour, and runs
    nothing."""
    data = {"e": embed.id, "p": embed.public_id}
    if run_id is not None:
        data["r"] = run_id
    return _serializer().dumps(data)


def check_token(embed: Embed, token: str | None, run_id: str | None = None) -> None:
    """TokenRefused unless ``token`` was made for this widget and public id within 15
    minutes (with ``run_id``: a run's token of that run, within the hour)."""
    if not token or len(token) > 500:
        raise TokenRefused(expired=False)
    max_age = TOKEN_SECONDS if run_id is None else RUN_TOKEN_SECONDS
    try:
        data = _serializer().loads(token, max_age=max_age)
    except SignatureExpired:
        raise TokenRefused(expired=True) from None
    except BadSignature:
        raise TokenRefused(expired=False) from None
    if not isinstance(data, dict) or data.get("e") != embed.id or data.get("p") != embed.public_id:
        raise TokenRefused(expired=False)
    if data.get("r") != run_id:  # a page's token shows no run; a run's token runs nothing
        raise TokenRefused(expired=False)


# --- caps ---------------------------------------------------------------------------------


# --- running ------------------------------------------------------------------------------


def run(widget: Live, inputs: dict, visitor: str, ticket: Ticket) -> runs.RunResult:
    """Run the widget's tool on checked, stored ``inputs`` through its key, exactly as an API
    run of that key (its daily quota, credits, ledger and run record), as ``source`` embed.
    CapReached (``quota``) when the key's quota is used up, RunFailed when the tool failed:
    either way the day's caps are given back and nothing is charged."""
    try:
        result = runs.run_inline(
            widget.key, widget.tool, inputs, embed_id=widget.embed.id, address=visitor
        )
    except runs.QuotaExceeded:
        release(ticket)
        raise _quota_reached() from None
    except runs.RunFailed:
        release(ticket)
        raise
    except BaseException:
        release(ticket)
        raise
    runs.end_transaction()  # the claim of a free call, if one was made
    return result


def submit(widget: Live, inputs: dict, visitor: str, ticket: Ticket) -> Run:
    """A queued run of the widget's tool on checked, stored ``inputs`` through its key, as
    that key's API runs are submitted (its daily quota reserved now; credits when it
    succeeds), ``source`` embed; committed, for the caller to enqueue. CapReached
    (``quota``) when the key's quota is used up, the day's caps given back. A run that
    fails or is canceled gives its quota and the widget's caps back (services/runs.py)."""
    try:
        result = runs.submit(
            widget.key, widget.tool, inputs, notify=False, embed_id=widget.embed.id,
            address=visitor,
        )  # fmt: skip
        submissions.commit(result.held)
    except runs.QuotaExceeded:
        db.session.rollback()
        release(ticket)
        raise _quota_reached() from None
    except BaseException:
        db.session.rollback()
        release(ticket)
        raise
    return result.run


def _quota_reached() -> CapReached:
    """The widget's key has used its daily quota: nothing runs until 00:00 UTC."""
    return CapReached(
        "quota",
        "This tool cannot run any more today. It works again tomorrow (from 00:00 UTC).",
        clock.seconds_to_midnight(),
    )


def find_run(embed: Embed, run_id: object) -> Run | None:
    """The widget's queued run ``run_id`` (None for any other run: never revealed)."""
    if not isinstance(run_id, str) or len(run_id) > 36:
        return None
    # Read again: its state as the worker left it, not as this session last saw it.
    run = db.session.get(Run, run_id, populate_existing=True)
    if run is None or run.embed_id != embed.id or run.source != "embed":
        return None
    return run


# --- usage --------------------------------------------------------------------------------


@dataclass(frozen=True)
class DayUsage:
    day: str
    runs: int
    credits: int


def totals(embed_ids: list[str], days: int = 30) -> dict[str, tuple[int, int, int]]:
    """Per widget: (runs today, runs over ``days`` days, credits over them), of its
    succeeded runs (UTC days)."""
    if not embed_ids:
        return {}
    today, _ = day_bounds(clock.utc_day())
    since = today - timedelta(days=days - 1)
    rows = db.session.execute(
        select(
            Run.embed_id,
            func.count().filter(Run.created_at >= today),
            func.count(),
            func.coalesce(func.sum(Run.credits), 0),
        )
        .where(Run.embed_id.in_(embed_ids), Run.created_at >= since, Run.status == "succeeded")
        .group_by(Run.embed_id)
    )
    return {embed_id: (int(a), int(b), int(c)) for embed_id, a, b, c in rows}


def daily_usage(embed_id: str, days: int = 30) -> list[DayUsage]:
    """The widget's succeeded runs and their credits per UTC day, newest first, for the last
    ``days`` days (days without runs included)."""
    today, _ = day_bounds(clock.utc_day())
    since = today - timedelta(days=days - 1)
    rows = db.session.execute(
        select(Run.created_at, Run.credits).where(
            Run.embed_id == embed_id, Run.created_at >= since, Run.status == "succeeded"
        )
    )
    figures: dict[str, list[int]] = {}
    for created_at, credits in rows:
        day = clock.utc_day(clock.as_utc(created_at))
        counted = figures.setdefault(day, [0, 0])
        counted[0] += 1
        counted[1] += credits or 0
    return [
        DayUsage(day, *figures.get(day, (0, 0)))
        for day in (clock.utc_day(today - timedelta(days=back)) for back in range(days))
    ]
