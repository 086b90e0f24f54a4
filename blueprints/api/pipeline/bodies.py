"""Request bodies: JSON or multipart up to a size (413), JSON text read strictly (400
``invalid_json``), and the 422 of fields that do not validate."""

import gc
import json
from typing import Any

import orjson
from flask import current_app, request
from werkzeug.datastructures import FileStorage

from blueprints.api.problems import Problem


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
