"""The request pipeline (docs/architecture/request-pipeline.md), in its order.

body size (413) → key (401) → per-minute limit (429) → plan has API access (402/403) →
body parses (400) → ... → quota (429, in services/runs.py). Each step raises a Problem.
"""

import gc
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import orjson
from flask import current_app, g, request
from werkzeug.datastructures import FileStorage

from blueprints.api.problems import Problem, problem_response
from extensions import db
from services import clock, idempotency, keys, quota, ratelimit, runs
from services.keys import KeyContext
from services.plans import upgrade_url
from services.run_events import END, run_events
from speedups import append_headers

# Code that runs on every request takes the objects behind Flask's ``request``, ``g`` and
# ``current_app`` with ``_get_current_object()``, once: each attribute read through a proxy
# first builds and discards an AttributeError (the proxy's ``__getattr__`` is asked only
# then), about 1 µs.

API_KEY_HEADER = "X-SVC-API-Key"
_API_KEY_ENVIRON = "HTTP_" + API_KEY_HEADER.upper().replace("-", "_")


def raw_key_from_request() -> str | None:
    environ = request._get_current_object().environ  # cheaper than request.headers
    raw = environ.get(_API_KEY_ENVIRON)
    if raw is None:
        scheme, _, value = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() == "bearer":
            raw = value
    return raw.strip() if raw else None


def authenticate(*, read_usage: bool = False, defer_limit: bool = False) -> KeyContext:
    """Resolve the key (401) and spend one request of its per-minute limit (429).

    With ``read_usage`` the day's usage is read too (``g.day_usage``), in the same Redis
    round trip where the limiter's storage allows it. With ``defer_limit`` (the run
    endpoints) the hit is spent later, with the run's quota reservation (``admit_run``), or
    when the request is refused before that (``settle_limit``): either way a caller over
    the limit is answered 429 before any later refusal, as the pipeline's order says.
    """
    raw = raw_key_from_request()
    if not raw:
        raise Problem(
            401,
            "invalid_api_key",
            f"Send your API key in the {API_KEY_HEADER} header "
            "(or as Authorization: Bearer <key>).",
            headers={"WWW-Authenticate": f'ApiKey header="{API_KEY_HEADER}"'},
        )
    context = keys.resolve(raw)
    if context is None:
        raise Problem(
            401,
            "invalid_api_key",
            "This API key is not valid: it is malformed, unknown, revoked or expired, or its "
            "account is suspended.",
            headers={"WWW-Authenticate": f'ApiKey header="{API_KEY_HEADER}"'},
        )
    state = g._get_current_object()
    state.key = context
    if defer_limit:
        state.limit_pending = True
    else:
        _spend_limit(context, read_usage=read_usage)
    return keys.touch(context)


def _spend_limit(
    context: KeyContext, *, read_usage: bool = False, reserve: quota.Request | None = None
) -> ratelimit.MinuteWindow:
    """Spend the key's per-minute hit (429 when over), with what rides along."""
    state = g._get_current_object()
    state.limit_pending = False
    now = clock.now()
    usage_hash = quota.usage_key(context.key_id, clock.utc_day(now)) if read_usage else None
    window = ratelimit.spend_minute(
        context.key_hash, context.per_minute, read_usage=usage_hash, reserve=reserve
    )
    state.minute_window = window
    _note_headroom(context.key_id, window.remaining if window.allowed else 0, window.reset_at)
    if read_usage:
        state.day_usage = (
            quota.Usage(clock.utc_day(now), *window.usage)
            if window.usage is not None
            else quota.store().usage(context.key_id, now)
        )
    if not window.allowed:
        retry_after = max(1, int(window.reset_at - time.time() + 0.999))
        raise Problem(
            429,
            "rate_limited",
            f"This key may make {context.per_minute} requests per minute; "
            f"try again in {retry_after} s.",
            headers={"Retry-After": retry_after},
            limit=context.per_minute,
            remaining=0,
            resets_at=_iso(window.reset_at),
        )
    return window


def settle_limit() -> None:
    """Spend a deferred per-minute hit now (429 when over); nothing if none is pending."""
    if g._get_current_object().get("limit_pending"):
        _spend_limit(current_key())


def admit_run(context: KeyContext, reserve: quota.Request | None) -> quota.Reservation | None:
    """A run's admission: the deferred per-minute hit (429) and the day's quota
    reservation ``reserve`` (None for sandbox keys), in one Redis round trip where the
    limiter's storage allows. Returns the reservation (None without one)."""
    reservation = None
    if g._get_current_object().get("limit_pending"):
        reservation = _spend_limit(context, reserve=reserve).reservation
    if reservation is None:
        reservation = runs.reserve_only(context, reserve)
    if reservation is not None:
        _note_headroom(context.key_id, day=reservation.remaining)
    return reservation


# Per process: how much room each key's last admission here left, as (requests left in its
# minute, when that minute ends, calls left today or None). An inline run is run before
# its admission (one Redis round trip instead of two: services/runs.py) only while both
# leave more than ``_HEADROOM``; near a limit it is admitted first, so that a refused call
# costs no work.
_headroom: dict[str, tuple[int, float, int | None]] = {}
_HEADROOM = 32
_HEADROOM_KEYS = 10_000
_KEEP = object()


def _note_headroom(key_id: str, minute: int | None = None, reset_at: float = 0.0, day=_KEEP):
    seen = _headroom.get(key_id)
    if minute is None:
        if seen is None:
            return
        minute, reset_at = seen[0], seen[1]
    if day is _KEEP:
        day = seen[2] if seen is not None else None
    if len(_headroom) >= _HEADROOM_KEYS and key_id not in _headroom:
        _headroom.clear()
    _headroom[key_id] = (minute, reset_at, day)


def likely_admitted(context: KeyContext) -> bool:
    """Whether this key's last admission in this process left room to spare under its
    per-minute limit (or that minute is over) and its daily quota."""
    seen = _headroom.get(context.key_id)
    if seen is None:
        return False
    minute, reset_at, day = seen
    if day is None or day <= _HEADROOM:
        return False
    return minute > _HEADROOM or (time.time() >= reset_at and context.per_minute > _HEADROOM)


def current_key() -> KeyContext:
    """The key ``authenticate`` resolved for this request."""
    return g._get_current_object().key


def require_api_access(*, on_slug_endpoint: bool = False) -> None:
    """Free and Starter keys may only call whoami (402 on the slug-in-path endpoint)."""
    context = current_key()
    if context.plan.api_access:
        return
    raise Problem(
        402 if on_slug_endpoint else 403,
        "plan_required",
        f"The {context.plan.name} plan has no API access beyond whoami; "
        "upgrade to Pro or higher to run tools.",
        upgrade_url=upgrade_url("pro"),
        required_plan="pro",
    )


def require_plan(required: str) -> None:
    """A paid plan below an endpoint's plan gets 402
    (docs/architecture/plan-gated-endpoints.md)."""
    context = current_key()
    if not context.plan.includes(required):
        raise Problem(
            402,
            "plan_required",
            f"This endpoint needs the {required} plan; this key's account is on "
            f"{context.plan.name}.",
            upgrade_url=upgrade_url(required),
            required_plan=required,
        )


@dataclass(frozen=True)
class Prefer:
    wait: float
    respond_async: bool
    applied: str | None


DEFAULT_WAIT = 25
MAX_WAIT = 60
_NO_PREFERENCE = Prefer(DEFAULT_WAIT, False, None)


def parse_prefer() -> Prefer:
    """The ``Prefer`` header (RFC 7240): ``wait=N`` (clamped to 60) and ``respond-async``."""
    header = request._get_current_object().environ.get("HTTP_PREFER")
    if header is None:
        return _NO_PREFERENCE
    wait, respond_async, applied = DEFAULT_WAIT, False, []
    for preference in header.split(","):
        name, _, value = preference.strip().partition("=")
        name = name.strip().lower()
        if name == "respond-async":
            respond_async = True
            applied.append("respond-async")
        elif name == "wait" and _is_count(value := value.strip()):
            wait = min(int(value), MAX_WAIT)
            applied.append(f"wait={wait}")
    return Prefer(wait, respond_async, ", ".join(applied) or None)


def _is_count(text: str) -> bool:
    """ASCII digits only, and few enough for ``int`` (str.isdigit alone takes "²", a
    latin-1 character a header may carry, and int() refuses over 4,300 digits)."""
    return 0 < len(text) <= 18 and text.isascii() and text.isdigit()


def read_body(*, max_bytes: int) -> tuple[dict, dict[str, FileStorage]]:
    """The request body as a JSON object, or a multipart form with its file uploads
    (413, 415, 400, 422). Returns the fields and the uploads by field name."""
    this_request = request._get_current_object()
    if (this_request.content_length or 0) > max_bytes:
        raise too_large(max_bytes)
    coding = this_request.environ.get("HTTP_CONTENT_ENCODING", "").strip()
    if coding and coding.lower() != "identity":
        # Read as it came, a compressed body was refused as JSON that is not UTF-8.
        raise Problem(
            415,
            "unsupported_media_type",
            f"The body is sent with Content-Encoding: {coding[:40]}, which is not decoded "
            "here: send it uncompressed.",
            headers={"Accept-Encoding": "identity"},
        )
    mimetype = this_request.mimetype
    if mimetype == "multipart/form-data":
        files, form = this_request.files, this_request.form
        return {name: form[name] for name in form}, {name: files[name] for name in files}
    if mimetype and mimetype != "application/json" and not mimetype.endswith("+json"):
        raise Problem(
            415,
            "unsupported_media_type",
            f"Send the body as application/json (or multipart/form-data), not {mimetype}.",
        )
    data = this_request.get_data(cache=True)
    if len(data) > max_bytes:
        raise too_large(max_bytes)
    try:
        body = parse_json(data or b"{}")
    except InvalidJson as error:
        raise Problem(400, "invalid_json", str(error)) from None
    if not isinstance(body, dict):
        raise validation_failed({"": ["The body must be a JSON object."]})
    return body, {}


# --- JSON text ---------------------------------------------------------------------------

# The deepest nesting of arrays and objects read: far beyond any tool's input, and far within
# what everything downstream handles (orjson writes 254 levels and the recorder nests a run's
# input two levels down; Python's recursion limit is 1,000 frames).
MAX_JSON_DEPTH = 128
_UTF8_BOM = b"\xef\xbb\xbf"
# An integer of 19 digits or more may be outside 64 bits, which orjson reads as a float.
# Such a run of digits is looked for as zeros in the body with every digit made "0" and
# everything else " " (a third of the time of re.search(rb"[0-9]{19}"), which tries each
# position in turn).
_LONG_DIGITS = b"0" * 19
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_NOT_JSON_LITERALS = ("NaN", "-Infinity", "Infinity")
# Python's cyclic garbage collector runs every 700 new containers and, as they pile up, over
# all of them: it took 0.45 s of the 0.47 s spent reading a 1 MiB body of 350,000 empty
# arrays. It waits while a body this large is read; nothing read can be cyclic garbage.
_PAUSE_GC_ABOVE = 64 * 1024


class InvalidJson(ValueError):
    """JSON text that is refused; the message says why, for a person."""


def parse_json(data: bytes, what: str = "The body") -> Any:
    """``data`` (UTF-8 JSON text) as Python values, or InvalidJson naming ``what``.

    orjson reads it (a fifth of the stdlib's time for a run's body) and refuses what the
    stdlib would let through: ``NaN`` and ``Infinity``, numbers too large for a double,
    unpaired surrogate escapes (``"\\ud800"``: PostgreSQL cannot store them) and text that is
    not UTF-8. Nesting deeper than ``MAX_JSON_DEPTH`` is refused too: the stdlib's parser
    raised RecursionError (a 500) at about 1,000 levels and orjson stops at 1,024, but
    encoders and validators downstream recurse. It is looked for only when the body has
    more opening brackets than that, so a usual body pays two ``bytes.count`` for it.
    An integer outside 64 bits is kept exact, as the stdlib reads it, not rounded to a
    float. A leading UTF-8 byte order mark is ignored (RFC 8259 allows it).
    """
    if len(data) <= _PAUSE_GC_ABOVE or not gc.isenabled():
        return _parse_json(data, what)
    gc.disable()
    try:
        return _parse_json(data, what)
    finally:
        gc.enable()


def _parse_json(data: bytes, what: str) -> Any:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        if not data.startswith(_UTF8_BOM):
            raise InvalidJson(_why_not_json(data, error, what)) from None
        data = data[len(_UTF8_BOM) :]
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError as error:
            raise InvalidJson(_why_not_json(data, error, what)) from None
    # Each level takes two bytes at least, and an opening bracket (counted in strings too).
    if (
        len(data) > 2 * MAX_JSON_DEPTH
        and data.count(b"[") + data.count(b"{") > MAX_JSON_DEPTH
        and _deeper_than(value, MAX_JSON_DEPTH)
    ):
        raise InvalidJson(_too_deep(what))
    if _LONG_DIGITS in data.translate(_DIGITS_AS_ZEROS):
        try:  # the same document (orjson checked it), read with exact integers
            value = json.loads(data)
        except ValueError as error:  # more than 4,300 digits; orjson saw a float there
            raise InvalidJson(f"{what} is not valid JSON: {error}.") from None
    return value


def _too_deep(what: str) -> str:
    return (
        f"{what} is nested deeper than {MAX_JSON_DEPTH} levels of arrays and objects, "
        "the most read here."
    )


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests arrays and objects more than ``limit`` levels deep: level by
    level, without recursion, carrying only the containers that could go deeper (a 1 MiB
    body of 4,000 towers 128 deep, the worst found, takes about 0.2 s)."""
    level = [value] if type(value) is dict or type(value) is list else []
    for _ in range(limit - 1):  # ``level``: the non-empty containers one level down
        level = [
            item
            for container in level
            for item in (container.values() if type(container) is dict else container)
            if (type(item) is dict or type(item) is list) and item
        ]
    return any(
        type(item) is dict or type(item) is list
        for container in level
        for item in (container.values() if type(container) is dict else container)
    )


def _why_not_json(data: bytes, error: orjson.JSONDecodeError, what: str) -> str:
    """orjson's complaint, said for a person (and as precisely as the stdlib's was)."""
    message, text, at = error.msg, error.doc, error.pos
    where = f"line {error.lineno} column {error.colno} (char {at})"
    if b"\x00" in data[:4]:  # JSON text starts with ASCII (RFC 8259 section 8.1)
        return f"{what} is not valid JSON: send it as UTF-8 (it looks like UTF-16 or UTF-32)."
    if message.startswith("str is not valid UTF-8"):  # orjson's message for any bad byte
        try:
            data.decode()
        except UnicodeDecodeError as bad:
            return (
                f"{what} is not valid JSON: it is not UTF-8 "
                f"(byte 0x{data[bad.start]:02x} at offset {bad.start})."
            )
    if message == "depth limit exceeded":
        return _too_deep(what)
    if message == "failed to allocate memory":
        # orjson's reader reserves room by the body's length, and a malformed body that opens
        # many arrays or objects (one cut short, say) runs out of it before the fault is
        # found: the stdlib says what and where it is.
        try:
            json.loads(data)
        except RecursionError:
            return _too_deep(what)
        except ValueError as stdlib:
            return f"{what} is not valid JSON: {stdlib}."
    if "surrogate" in message:
        return (
            f"{what} is not valid JSON: the string at {where} holds an unpaired surrogate "
            f"({text[at : at + 6]}); a \\uD800-\\uDFFF escape must be one half of a pair, "
            "a high one followed by a low one."
        )
    for literal in _NOT_JSON_LITERALS:
        start = at - 1 if literal.startswith("-") else at
        if text.startswith(literal, start):
            return (
                f"{what} is not valid JSON: {literal} at {where} is not a JSON value "
                "(JSON has no NaN or infinities; send null or a number)."
            )
    if message.startswith("number is infinity"):
        return f"{what} is not valid JSON: the number at {where} is too large for a double."
    return f"{what} is not valid JSON: {error}."


def json_body() -> dict:
    """The request body, required, as a JSON object of at most the text limit (413, 415,
    400, 422)."""
    body, uploads = read_body(max_bytes=current_app.config["MAX_TEXT_BODY"])
    if not body and not uploads and not request.get_data(cache=True):
        raise validation_failed({"": ["The body is required: send a JSON object."]})
    if uploads:
        raise validation_failed({name: ["This endpoint takes no files."] for name in uploads})
    return body


def cancel_or_409(run: Any, cancel: Callable[[Any], bool]) -> None:
    """Cancel a tool or workflow run with ``cancel`` and commit; 409 once it has ended. Its
    followers' streams end (``done``, canceled) at once."""
    if not cancel(run):
        db.session.rollback()
        raise Problem(
            409,
            "run_not_cancelable",
            f"The run has already ended ({run.status}); it cannot be canceled.",
        )
    db.session.commit()
    run_events().append(run.id, END)


def validation_failed(errors: dict[str, list[str]]) -> Problem:
    fields = ", ".join(sorted(name or "(body)" for name in errors))
    return Problem(
        422, "validation_failed", f"The request has invalid fields: {fields}.", errors=errors
    )


def too_large(max_bytes: int | None = None) -> Problem:
    limit = max_bytes or current_app.config["MAX_TEXT_BODY"]
    shown = f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit // 1024} KiB"
    return Problem(
        413, "payload_too_large", f"The body is larger than {shown}, the most accepted here."
    )


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


# --- headers on every authenticated response ---------------------------------------------


def rate_limit_headers(response):
    state = g._get_current_object()  # one context lookup for the reads below
    context: KeyContext | None = state.get("key")
    window: ratelimit.MinuteWindow | None = state.get("minute_window")
    if context is None or window is None:
        return response
    minute_reset = max(0, int(window.reset_at - time.time() + 0.999))
    remaining = f'"minute";r={window.remaining};t={minute_reset}'
    if context.sandbox:
        policy = _policy(window.limit, None)
    else:
        usage = state.get("day_usage")
        if usage is None:
            usage = quota.store().usage(context.key_id, clock.now())
        day_left = max(0, context.daily_quota - usage.calls)
        remaining += f', "day";r={day_left};t={clock.seconds_to_midnight()}'
        policy = _policy(window.limit, context.daily_quota)
    # Built from numbers and quoted names: appended as they are (speedups.py says why).
    append_headers(
        response.headers,
        (
            ("RateLimit-Policy", policy),
            ("RateLimit", remaining),
            ("X-RateLimit-Limit", str(window.limit)),
            ("X-RateLimit-Remaining", str(window.remaining)),
            ("X-RateLimit-Reset", str(int(window.reset_at + 0.999))),
        ),
    )
    return response


@lru_cache(maxsize=1024)
def _policy(per_minute: int, daily: int | None) -> str:
    """The ``RateLimit-Policy`` value: the minute's window, and the day's unless sandbox."""
    minute = f'"minute";q={per_minute};w=60'
    return minute if daily is None else f'{minute}, "day";q={daily};w=86400'


def note_usage(reservation) -> None:
    """The day's usage a run's reservation says, for the rate-limit headers of its answer."""
    if reservation is not None:
        g._get_current_object().day_usage = quota.Usage(reservation.day, reservation.used, 0)


def quota_problem(reservation) -> Problem:
    """429 ``quota_exceeded`` for a reservation refused: the key's day is used up."""
    note_usage(reservation)
    return Problem(
        429,
        "quota_exceeded",
        f"This key has used all {reservation.limit} calls of today (UTC); "
        "the quota resets at 00:00 UTC.",
        headers={"Retry-After": clock.seconds_to_midnight()},
        limit=reservation.limit,
        remaining=0,
        resets_at=clock.next_midnight().isoformat().replace("+00:00", "Z"),
    )


# --- Idempotency-Key on POSTs that start runs ---------------------------------------------

IDEMPOTENCY_HEADER = "Idempotency-Key"
_IDEMPOTENCY_ENVIRON = "HTTP_IDEMPOTENCY_KEY"
# Answers worth replaying: the run was started (or refused for its own input). Anything else
# (a 401, a 429, a 503...) leaves the key free, so the same request can simply be retried.
_REPLAYABLE = {200, 202, 422}


def respond_idempotently(produce, events=None):
    """``produce()`` the answer, or replay the first answer to a repeated request with the
    same ``Idempotency-Key`` (422 for the key on another request, 409 while in flight).

    A streamed answer (a run's events, ``"stream": true``) is not kept: its run is. The key is
    settled as soon as the run is admitted, and a repeated request gets ``events(run_id)``,
    that run's events from its start: a client whose stream broke retries the request and
    picks up the same run, which ran once."""
    key = request._get_current_object().environ.get(_IDEMPOTENCY_ENVIRON)
    if key is None:
        return produce()
    settle_limit()  # a caller over its limit claims no key
    if not 1 <= len(key) <= 255 or not key.isprintable():
        raise validation_failed({IDEMPOTENCY_HEADER: ["Must be 1 to 255 printable characters."]})
    context = current_key()
    print_ = idempotency.fingerprint(request.method, request.path, request.get_data())
    slot = idempotency.claim(context.key_id, key, print_)
    if slot.state == "conflict":
        raise Problem(
            422,
            "idempotency_key_reused",
            "This Idempotency-Key was used for a different request in the last 24 hours.",
        )
    if slot.state == "in_flight":
        raise Problem(
            409,
            "idempotency_in_flight",
            "A request with this Idempotency-Key is still being processed; retry shortly.",
            headers={"Retry-After": 1},
        )
    if slot.state == "replay":
        stored = slot.stored
        if "events_of" in stored and events is not None:
            response = events(stored["events_of"])
        else:
            response = current_app.response_class(
                stored["body"], status=stored["status"], mimetype=stored["mimetype"]
            )
        for name, value in stored["headers"].items():
            response.headers[name] = value
        response.headers["Idempotent-Replayed"] = "true"
        return response
    try:
        response = current_app.make_response(produce())
    except Problem as problem:
        kept = None
        if problem.status in _REPLAYABLE:
            answer = problem_response(problem)
            kept = _keepable(answer)
        idempotency.complete(context.key_id, key, print_, kept)
        raise
    except BaseException:  # an error, or the request given up on: the key is free again
        idempotency.complete(context.key_id, key, print_, None)
        raise
    kept = _keepable(response) if response.status_code in _REPLAYABLE else None
    idempotency.complete(context.key_id, key, print_, kept)
    return response


def _keepable(response) -> dict:
    followed = getattr(response, "events_of", None)
    if followed is not None:  # read as it streams, never held here
        return {"status": response.status_code, "events_of": followed, "headers": {}}
    headers = {
        name: response.headers[name]
        for name in ("Location", "Preference-Applied")
        if name in response.headers
    }
    return {
        "status": response.status_code,
        "mimetype": response.mimetype,
        "body": response.get_data(as_text=True),
        "headers": headers,
    }
