"""``seo.sitemap``: XML sitemaps generated and validated."""

from __future__ import annotations

import datetime
import html
import html.parser
import re
from collections import Counter
from typing import Any

from engines.base import ChoiceEngine, EngineError
from engines.web._helpers import Issue, _host, _is_absolute, _issue

# --- seo.sitemap -------------------------------------------------------------------------

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
CHANGEFREQS = ("always", "hourly", "daily", "weekly", "monthly", "yearly", "never")
_MAX_SITEMAP_URLS = 50_000
_W3C_DATE_RE = re.compile(
    r"^\d{4}(?:-\d{2}(?:-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2}))?)?)?$"
)


def _valid_lastmod(value: str) -> bool:
    if not _W3C_DATE_RE.match(value):
        return False
    try:
        datetime.date.fromisoformat(value[:10]) if len(value) >= 10 else None
    except ValueError:
        return False
    return True


def _quoted(line: str) -> str:
    return f'"{line}"' if len(line) <= 60 else f'"{line[:59]}…"'


def _sitemap_entry(line: str, inputs: dict[str, Any]) -> tuple[dict[str, str], str | None]:
    """The line's sitemap entry, or why it has none: a sentence about the line."""
    url, *extra = line.split()
    entry = {"loc": url}
    if not _is_absolute(url):
        # The first word is taken as the URL: quoting the line shows what was read.
        return entry, f"{_quoted(line)} does not start with an absolute http(s) URL"
    if len(url) > 2048:
        return entry, "its URL is longer than 2,048 characters"
    lastmod = inputs["lastmod"].strip()
    changefreq, priority = inputs["changefreq"], inputs["priority"]
    for value in extra:
        if value in CHANGEFREQS:
            changefreq = value
        elif re.fullmatch(r"[01](?:\.\d)?", value) and float(value) <= 1:
            priority = float(value)
        elif _valid_lastmod(value):
            lastmod = value
        else:
            return entry, f'"{value}" is not a date, change frequency or priority'
    if lastmod:
        entry["lastmod"] = lastmod
    if changefreq:
        entry["changefreq"] = changefreq
    if priority is not None:
        entry["priority"] = f"{priority:.1f}"
    return entry, None


def _sitemap_generate(inputs: dict[str, Any]) -> dict[str, Any]:
    if inputs["lastmod"].strip() and not _valid_lastmod(inputs["lastmod"].strip()):
        raise EngineError("lastmod must be a W3C date such as 2024-05-01 or 2024-05-01T10:00:00Z.")
    entries: dict[str, dict[str, str]] = {}
    first_lines: dict[str, int] = {}
    skipped = []
    for number, line in enumerate(inputs["urls"].splitlines(), start=1):
        if not line.strip():
            continue
        entry, problem = _sitemap_entry(line.strip(), inputs)
        if problem is None and entry["loc"] in entries:
            problem = f"{entry['loc']} is listed twice (first on line {first_lines[entry['loc']]})"
        if problem:
            skipped.append({"line": number, "reason": f"Line {number}: {problem}; skipped."})
        else:
            entries[entry["loc"]] = entry
            first_lines[entry["loc"]] = number
    if not entries:
        raise EngineError("No valid URL to list: give absolute http(s) URLs, one per line.")
    body = []
    for entry in entries.values():
        fields = "".join(
            f"\n    <{key}>{html.escape(value, quote=False)}</{key}>"
            for key, value in entry.items()
        )
        body.append(f"  <url>{fields}\n  </url>")
    xml = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<urlset xmlns="{SITEMAP_NS}">\n' + "\n".join(body) + "\n</urlset>\n"
    )
    return {"xml": xml, "url_count": len(entries), "skipped": skipped}


def _sitemap_validate(inputs: dict[str, Any]) -> dict[str, Any]:
    import xml.etree.ElementTree as ElementTree

    source = inputs["xml"].strip()
    if "<!DOCTYPE" in source.upper() or "<!ENTITY" in source.upper():
        raise EngineError("Sitemaps must not declare a DOCTYPE or entities; remove them.")
    try:
        root = ElementTree.fromstring(source)
    except ElementTree.ParseError as error:
        raise EngineError(f"The sitemap is not well-formed XML: {error}.") from None
    issues: list[Issue] = []
    namespace, _, kind = root.tag.rpartition("}")
    if kind not in ("urlset", "sitemapindex"):
        raise EngineError(
            f"The root element is <{kind}>; a sitemap starts with <urlset> or <sitemapindex>."
        )
    if namespace.lstrip("{") != SITEMAP_NS:
        issues.append(
            _issue("error", "xmlns", f'The root element must declare xmlns="{SITEMAP_NS}".')
        )
    child = "url" if kind == "urlset" else "sitemap"
    ns = f"{{{SITEMAP_NS}}}" if namespace else ""
    locs: list[str] = []
    for index, item in enumerate(root.findall(f"{ns}{child}"), start=1):
        locs.extend(_check_sitemap_item(item, ns, index, issues))
    for loc, count in Counter(locs).items():
        if count > 1:
            issues.append(_issue("warning", loc, f"Listed {count} times."))
    if not locs:
        issues.append(_issue("error", child, f"The sitemap lists no <{child}> entries."))
    if len(locs) > _MAX_SITEMAP_URLS:
        issues.append(
            _issue(
                "error", child, f"{len(locs)} entries; a sitemap may list {_MAX_SITEMAP_URLS:,}."
            )
        )
    hosts = sorted({_host(loc) for loc in locs if _is_absolute(loc)})
    if len(hosts) > 1:
        issues.append(
            _issue("warning", "loc", f"URLs span {len(hosts)} hosts; a sitemap covers one.")
        )
    return {
        "type": kind,
        "entries": len(locs),
        "valid": not any(i["severity"] == "error" for i in issues),
        "hosts": hosts,
        "issues": issues[:500],
    }


def _check_sitemap_item(item: Any, ns: str, index: int, issues: list[Issue]) -> list[str]:
    loc = (item.findtext(f"{ns}loc") or "").strip()
    where = loc or f"entry {index}"
    if not loc:
        issues.append(_issue("error", where, "The entry has no <loc>."))
        return []
    if not _is_absolute(loc):
        issues.append(_issue("error", where, "<loc> must be an absolute http(s) URL."))
    elif len(loc) > 2048:
        issues.append(_issue("error", where, "<loc> is longer than 2,048 characters."))
    lastmod = item.findtext(f"{ns}lastmod")
    if lastmod is not None and not _valid_lastmod(lastmod.strip()):
        issues.append(_issue("error", where, f'<lastmod> "{lastmod.strip()}" is not a W3C date.'))
    changefreq = item.findtext(f"{ns}changefreq")
    if changefreq is not None and changefreq.strip() not in CHANGEFREQS:
        issues.append(
            _issue("error", where, f"<changefreq> must be one of {', '.join(CHANGEFREQS)}.")
        )
    priority = item.findtext(f"{ns}priority")
    if priority is not None:
        try:
            bad = not 0 <= float(priority) <= 1
        except ValueError:
            bad = True
        if bad:
            issues.append(_issue("error", where, "<priority> must be a number from 0.0 to 1.0."))
    return [loc]


class SitemapEngine(ChoiceEngine):
    name = "seo.sitemap"
    jobs = {"generate": _sitemap_generate, "validate": _sitemap_validate}
