"""Helpers the converter families share: size limits, JSON in and out, time zones, domains."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, date, datetime, time
from typing import Any

from engines._json import parse_json
from engines.base import EngineError

MAX_DEPTH = 64
MAX_NODES = 100_000
MAX_ROWS = 10_000
MAX_OUTPUT_CHARS = 1_000_000


def _check_size(value: Any, what: str) -> None:
    """Refuse values nested deeper than MAX_DEPTH or holding more than MAX_NODES values.

    Walks iteratively and counts every visit, so YAML alias bombs and query results that
    repeat one object many times stop at the budget instead of expanding.
    """
    stack = [(value, 1)]
    nodes = 0
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise EngineError(f"{what} holds more than {MAX_NODES:,} values; send less data.")
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            raise EngineError(f"{what} is nested more than {MAX_DEPTH} levels deep.")
        stack.extend((child, depth + 1) for child in children)


def _bounded(text: str) -> str:
    if len(text) > MAX_OUTPUT_CHARS:
        raise EngineError(
            f"The result would be {len(text):,} characters, over the {MAX_OUTPUT_CHARS:,} "
            "limit; send less data."
        )
    return text


def _parse_json(text: str, what: str = "The JSON") -> Any:
    """Parse JSON text, with errors that give the line and column."""
    try:
        value = parse_json(text, f"{what} is invalid")
    except RecursionError:
        raise EngineError(f"{what} is nested more than {MAX_DEPTH} levels deep.") from None
    _check_size(value, what)
    return value


def _dump_json(value: Any, indent: int = 2) -> str:
    return _bounded(
        json.dumps(
            value,
            indent=indent or None,
            separators=(",", ": ") if indent else (",", ":"),
            ensure_ascii=False,
        )
    )


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(value)]


def _key_text(key: Any) -> str:
    """A mapping key as JSON spells it (YAML and TOML allow non-string keys)."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool):
        return json.dumps(key)
    return _plain(key) if isinstance(key, date | time) else str(key)


def _plain(value: Any) -> Any:
    """YAML/TOML values as JSON values: dates as ISO 8601 text, bytes as base64, sets as lists."""
    import base64

    if isinstance(value, dict):
        return {_key_text(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return [_plain(item) for item in items]
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        raise EngineError(f"The data holds {value}, which JSON cannot represent.")
    return value


def _json_path(parts: list[Any]) -> str:
    """A location as JSONPath: ``$.items[0].name``, ``$['odd key']``."""
    path = "$"
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            path += f".{part}"
        else:
            path += "[" + json.dumps(part, ensure_ascii=False) + "]"
    return path


def _split_list(text: str, limit: int, what: str) -> list[str]:
    """Items separated by commas or new lines, blanks dropped."""
    items = [item.strip() for item in re.split(r"[,\n]", text) if item.strip()]
    if len(items) > limit:
        raise EngineError(f"Give at most {limit} {what}; there are {len(items)}.")
    return items


def _round(value: float, digits: int) -> float | int:
    """``value`` to ``digits`` significant digits, as an int when it is whole."""
    if value == 0 or not math.isfinite(value):
        return 0 if value == 0 else value
    rounded = float(f"{value:.{digits}g}")
    return int(rounded) if rounded.is_integer() and abs(rounded) < 2**53 else rounded


def _flatten(value: Any, separator: str, arrays: str = "index") -> dict[str, Any]:
    """Leaves of nested objects keyed by their joined path (``a.b.0``).

    ``arrays="json"`` keeps arrays whole as JSON text; empty containers are kept as leaves.
    """
    flat: dict[str, Any] = {}

    def walk(item: Any, prefix: str) -> None:
        if isinstance(item, dict) and item:
            pairs: Any = item.items()
        elif isinstance(item, list) and item and arrays == "index":
            pairs = enumerate(item)
        else:
            if isinstance(item, list) and arrays == "json":
                item = json.dumps(item, ensure_ascii=False)
            flat[prefix] = item
            return
        for key, child in pairs:
            walk(child, f"{prefix}{separator}{key}" if prefix else str(key))

    walk(value, "")
    return flat


_REGEX_TIMEOUT = 1.0


def _utf8_text(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise EngineError(
            f"{what} decodes to {len(data):,} bytes of binary data, not UTF-8 text (starts "
            f"with {data[:16].hex(' ')})."
        ) from None


def _convert_domain(domain: str) -> tuple[str, str]:
    """A domain as (Unicode, ASCII/punycode) under IDNA 2008 with UTS #46 mapping."""
    import idna

    domain = domain.strip().rstrip(".")
    try:
        ascii_form = idna.encode(domain, uts46=True).decode("ascii")
        unicode_form = idna.decode(ascii_form)
    except (idna.IDNAError, UnicodeError) as error:
        raise EngineError(f"'{domain}' is not a valid domain name: {error}.") from None
    return unicode_form, ascii_form


def _zone(name: str) -> Any:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    name = name.strip()
    if name.upper() in ("UTC", "Z", "GMT"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise EngineError(
            f"Unknown time zone '{name}': use an IANA name such as Europe/Paris or "
            "America/New_York."
        ) from None


def _parse_datetime(text: str, zone_name: str) -> datetime:
    """An ISO 8601 date or date-time; without an offset it is read in ``zone_name``."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise EngineError(
            f"'{text.strip()}' is not an ISO 8601 date or date-time, such as 2025-03-14 or "
            "2025-03-14T09:30:00+01:00."
        ) from None
    if value.tzinfo is None:
        zone = _zone(zone_name)
        value = value.replace(tzinfo=zone)
        if value.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != value.replace(
            tzinfo=None
        ):
            raise EngineError(
                f"{text.strip()} does not exist in {zone_name} (the clocks skip it when summer "
                "time starts); pick another time."
            )
    return value
