"""Helpers shared by the web engines: issues, line lists, absolute URLs and hosts."""

from __future__ import annotations

from urllib.parse import urlsplit

from engines.base import EngineError

Issue = dict[str, str]


def _issue(severity: str, field: str, message: str) -> Issue:
    return {"severity": severity, "field": field, "message": message}


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _is_absolute(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _absolute_url(value: str, field: str) -> str:
    """``value`` stripped, or EngineError unless it is an absolute http(s) URL."""
    value = value.strip()
    try:
        valid = _is_absolute(value)
    except ValueError:
        valid = False
    if not valid:
        raise EngineError(f"{field} must be an absolute http(s) URL, such as https://example.com/.")
    return value


def _host(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").removeprefix("www.")
    except ValueError:
        return ""
