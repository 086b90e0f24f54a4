"""hreflang codes and alternates checked: ISO 639-1 languages, ISO 3166-1 regions."""

from __future__ import annotations

import re
from pathlib import Path

from engines._data import load_data
from engines.web._helpers import Issue, _is_absolute, _issue

# --- hreflang: shared validation ---------------------------------------------------------

_DATA = Path(__file__).with_name("data")
_LANGUAGES = frozenset(load_data(_DATA / "hreflang_languages.txt"))
_REGIONS = frozenset(load_data(_DATA / "hreflang_regions.txt"))
_HREFLANG_RE = re.compile(r"^([a-z]{2})(?:-([a-z]{4}))?(?:-([a-z]{2}))?$", re.I)


def _hreflang_problem(code: str) -> str | None:
    if code.lower() == "x-default":
        return None
    match = _HREFLANG_RE.match(code)
    if not match:
        return f'"{code}" is not language[-Script][-REGION], such as en, en-GB or zh-Hant-TW.'
    language, _, region = match.groups()
    if language.lower() not in _LANGUAGES:
        return f'"{language}" is not an ISO 639-1 language code.'
    if region and region.lower() not in _REGIONS:
        hint = " (use gb)" if region.lower() == "uk" else ""
        return f'"{region}" is not an ISO 3166-1 country code{hint}.'
    return None


def _hreflang_issues(pairs: list[tuple[str, str]], page_url: str) -> list[Issue]:
    issues = []
    seen: dict[str, str] = {}
    for code, href in pairs:
        problem = _hreflang_problem(code)
        if problem:
            issues.append(_issue("error", code, problem))
        if not _is_absolute(href):
            issues.append(_issue("error", code, f"{href or '(empty)'} must be an absolute URL."))
        key = code.lower()
        if key in seen and seen[key] != href:
            issues.append(_issue("error", code, f"{code} points to two URLs."))
        seen[key] = href
    if pairs and "x-default" not in seen:
        issues.append(
            _issue("notice", "x-default", "No x-default for visitors matching no language.")
        )
    if page_url and pairs and page_url not in {href for _, href in pairs}:
        issues.append(
            _issue("error", "self", "The page does not list itself among its alternates.")
        )
    return issues
