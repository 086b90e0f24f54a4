"""``seo.redirects``: redirect rules for Apache, nginx and Netlify."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from engines.base import Engine, EngineError

# --- seo.redirects -----------------------------------------------------------------------


def _redirect_source(value: str) -> str:
    if "://" in value:
        parts = urlsplit(value)
        value = parts.path or "/"
    return value if value.startswith("/") else "/" + value


def _redirect_rules(text: str, default_status: int) -> tuple[list[tuple[str, str, int]], list[str]]:
    rules: dict[str, tuple[str, str, int]] = {}
    warnings = []
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.replace("->", " ").replace("→", " ").replace(",", " ").split()
        if not parts:
            continue
        if len(parts) not in (2, 3) or (
            len(parts) == 3 and parts[2] not in ("301", "302", "307", "308")
        ):
            raise EngineError(
                f'Line {number}: write "<old path> <new path or URL> [301|302|307|308]".'
            )
        source, target = _redirect_source(parts[0]), parts[1]
        if "?" in source:
            raise EngineError(
                f"Line {number}: sources with a query string need a hand-written rule."
            )
        status = int(parts[2]) if len(parts) == 3 else default_status
        if source == target:
            warnings.append(f"Line {number}: {source} redirects to itself; skipped.")
            continue
        if source in rules:
            warnings.append(f"Line {number}: {source} was already redirected; the later rule wins.")
        rules[source] = (source, target, status)
    for source, target, _ in rules.values():
        if target in rules:
            warnings.append(
                f"{source} -> {target} -> {rules[target][1]} is a chain; point {source} at the end."
            )
    return list(rules.values()), warnings


def _apache(rules: list[tuple[str, str, int]]) -> str:
    lines = ["# mod_alias: exact paths, with or without a trailing slash"]
    for source, target, status in rules:
        pattern = re.escape(source.rstrip("/") or "/")
        slash = "/?" if source != "/" else ""
        lines.append(f"RedirectMatch {status} ^{pattern}{slash}$ {target}")
    return "\n".join(lines)


def _nginx(rules: list[tuple[str, str, int]]) -> str:
    return "\n".join(f"location = {s} {{ return {code} {t}; }}" for s, t, code in rules)


def _netlify(rules: list[tuple[str, str, int]]) -> str:
    width = max(len(s) for s, _, _ in rules) + 2
    return "\n".join(f"{s.ljust(width)}{t}  {code}" for s, t, code in rules)


_REDIRECT_WRITERS: dict[str, Callable[[list[tuple[str, str, int]]], str]] = {
    "apache": _apache,
    "nginx": _nginx,
    "netlify": _netlify,
}


class RedirectsEngine(Engine):
    name = "seo.redirects"

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        rules, warnings = _redirect_rules(inputs["rules"], int(inputs["default_status"]))
        if not rules:
            raise EngineError('List redirects one per line: "<old path> <new path or URL>".')
        return {
            "config": _REDIRECT_WRITERS[inputs["server"]](rules) + "\n",
            "count": len(rules),
            "warnings": warnings,
        }
