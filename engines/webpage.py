"""Local SEO on pages and links: HTML audits, structured data, sitemaps, robots rules, tags.

Nothing here fetches anything: every engine works on the HTML, URLs or text it is given.
Seven engine families, each choosing its operation from the tool's ``params``:

- ``seo.html_audit``: meta tags, links, image alt texts and hreflang tags of an HTML page;
- ``seo.tags``: Open Graph and Twitter card tags, hreflang tags;
- ``seo.url``: canonical URL normalisation, UTM links built and parsed;
- ``seo.robots``: robots.txt tested (RFC 9309, as Google reads it) and generated;
- ``seo.sitemap``: XML sitemaps generated and validated;
- ``seo.redirects``: redirect rules for Apache, nginx and Netlify;
- ``seo.jsonld``: schema.org JSON-LD for Google's rich results, checked for what they require.
"""

from __future__ import annotations

import datetime
import html
import html.parser
import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urljoin, urlsplit, urlunsplit

from engines.base import ChoiceEngine, Engine, EngineError
from engines.seo import pixel_width

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


# --- HTML page parsing -------------------------------------------------------------------


class _PageParser(html.parser.HTMLParser):
    """Collects what the audits read: head tags, links with their text, images, headings."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lang: str | None = None
        self.base: str | None = None
        self.titles: list[str] = []
        self.metas: list[dict[str, str]] = []
        self.link_tags: list[dict[str, str]] = []
        self.anchors: list[dict[str, Any]] = []
        self.images: list[dict[str, Any]] = []
        self.h1 = 0
        self._title: list[str] | None = None
        self._anchor: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name.lower(): (value or "") for name, value in attrs}
        if tag == "html" and self.lang is None:
            self.lang = values.get("lang")
        elif tag == "base" and self.base is None:
            self.base = values.get("href")
        elif tag == "title":
            self._title = []
        elif tag == "meta":
            self.metas.append(values)
        elif tag == "link":
            self.link_tags.append(values)
        elif tag == "h1":
            self.h1 += 1
        elif tag == "a":
            self._anchor = {**values, "_text": [], "_images": []}
            self.anchors.append(self._anchor)
        elif tag == "img":
            image = {**values, "_in_link": self._anchor is not None}
            self.images.append(image)
            if self._anchor is not None:
                self._anchor["_images"].append(values.get("alt", ""))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag == "a":
            self._anchor = None

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self._title is not None:
            self.titles.append(" ".join("".join(self._title).split()))
            self._title = None
        elif tag == "a":
            self._anchor = None

    def handle_data(self, data: str) -> None:
        if self._title is not None:
            self._title.append(data)
        if self._anchor is not None:
            self._anchor["_text"].append(data)


def _parse(document: str) -> _PageParser:
    parser = _PageParser()
    parser.feed(document)
    parser.close()
    return parser


def _meta(page: _PageParser, key: str, attribute: str = "name") -> list[str]:
    return [m.get("content", "").strip() for m in page.metas if m.get(attribute, "").lower() == key]


def _rels(tag: dict[str, str]) -> set[str]:
    return set(tag.get("rel", "").lower().split())


def _base_url(page: _PageParser, page_url: str) -> str:
    if page.base:
        return urljoin(page_url, page.base)
    return page_url


# --- seo.html_audit: meta tags -----------------------------------------------------------

_TITLE_RANGE, _TITLE_PX = (30, 60), 580
_DESCRIPTION_RANGE, _DESCRIPTION_PX = (70, 160), 920
_TWITTER_CARDS = {"summary", "summary_large_image", "app", "player"}
_SEVERITY_COST = {"error": 15, "warning": 5, "notice": 1}


def _text_field(
    values: list[str], field: str, bounds: tuple[int, int], font_px: int, max_px: int
) -> tuple[dict[str, Any], list[Issue]]:
    issues = []
    text = values[0] if values else None
    if text is None or not text:
        issues.append(_issue("error", field, f"The page has no {field}."))
        return {"text": text, "characters": 0, "pixel_width": 0}, issues
    if len(values) > 1:
        issues.append(
            _issue("warning", field, f"The page has {len(values)} {field} tags; keep one.")
        )
    length, width = len(text), pixel_width(text, font_px)
    low, high = bounds
    if length < low:
        issues.append(
            _issue("warning", field, f"The {field} is {length} characters; aim for {low}-{high}.")
        )
    elif length > high:
        issues.append(
            _issue("warning", field, f"The {field} is {length} characters; keep it to {high}.")
        )
    if width > max_px:
        issues.append(
            _issue(
                "warning",
                field,
                f"The {field} is about {width} px wide; Google cuts it near {max_px} px.",
            )
        )
    return {"text": text, "characters": length, "pixel_width": width}, issues


def _meta_audit(inputs: dict[str, Any]) -> dict[str, Any]:
    page = _parse(inputs["html"])
    issues: list[Issue] = []
    title, found = _text_field(page.titles, "title", _TITLE_RANGE, 20, _TITLE_PX)
    issues += found
    description, found = _text_field(
        _meta(page, "description"), "description", _DESCRIPTION_RANGE, 13, _DESCRIPTION_PX
    )
    issues += found
    canonicals = [t.get("href", "").strip() for t in page.link_tags if "canonical" in _rels(t)]
    canonical = canonicals[0] if canonicals else None
    if not canonicals:
        issues.append(
            _issue("warning", "canonical", "No canonical link; add one to name the preferred URL.")
        )
    elif len(canonicals) > 1:
        issues.append(
            _issue("error", "canonical", "Several canonical links; Google may ignore them all.")
        )
    elif not _is_absolute(canonical):
        issues.append(
            _issue(
                "notice", "canonical", "The canonical URL is relative; an absolute URL is safer."
            )
        )
    robots = ", ".join(_meta(page, "robots")) or None
    directives = set(re.split(r"[\s,]+", (robots or "").lower()))
    if {"noindex", "none"} & directives:
        issues.append(
            _issue("warning", "robots", "robots says noindex: search engines will drop the page.")
        )
    if "nofollow" in directives:
        issues.append(
            _issue("notice", "robots", "robots says nofollow: links on the page pass no signals.")
        )
    viewport = (_meta(page, "viewport") or [None])[0]
    if viewport is None:
        issues.append(
            _issue("error", "viewport", "No viewport meta tag: the page will not fit phones.")
        )
    elif re.search(r"user-scalable\s*=\s*(no|0)|maximum-scale\s*=\s*1(\.0)?\b", viewport):
        issues.append(
            _issue("notice", "viewport", "The viewport blocks zooming, which hurts accessibility.")
        )
    if not page.lang:
        issues.append(_issue("warning", "lang", "The <html> tag has no lang attribute."))
    charset = next((m["charset"] for m in page.metas if m.get("charset")), None)
    if charset is None:
        issues.append(
            _issue("notice", "charset", 'No <meta charset>; declare "utf-8" early in <head>.')
        )
    open_graph = {
        m["property"].lower(): m.get("content", "")
        for m in page.metas
        if m.get("property", "").lower().startswith("og:")
    }
    issues += _open_graph_issues(open_graph)
    twitter = {
        m["name"].lower(): m.get("content", "")
        for m in page.metas
        if m.get("name", "").lower().startswith("twitter:")
    }
    card = twitter.get("twitter:card")
    if card is None:
        issues.append(
            _issue("notice", "twitter:card", "No twitter:card; X falls back to Open Graph tags.")
        )
    elif card not in _TWITTER_CARDS:
        issues.append(
            _issue("warning", "twitter:card", f'"{card}" is not a valid twitter:card type.')
        )
    if page.h1 == 0:
        issues.append(_issue("warning", "h1", "The page has no H1 heading."))
    elif page.h1 > 1:
        issues.append(
            _issue("notice", "h1", f"The page has {page.h1} H1 headings; one is clearer.")
        )
    if _meta(page, "keywords"):
        issues.append(
            _issue(
                "notice",
                "keywords",
                "meta keywords is ignored by Google and shows rivals your targets.",
            )
        )
    score = max(0, 100 - sum(_SEVERITY_COST[i["severity"]] for i in issues))
    return {
        "title": title,
        "description": description,
        "canonical": canonical,
        "robots": robots,
        "viewport": viewport,
        "lang": page.lang or None,
        "charset": charset,
        "open_graph": open_graph,
        "twitter": twitter,
        "h1_count": page.h1,
        "score": score,
        "issues": issues,
    }


def _open_graph_issues(tags: dict[str, str]) -> list[Issue]:
    issues = []
    for key, severity in (
        ("og:title", "warning"),
        ("og:image", "warning"),
        ("og:description", "notice"),
        ("og:url", "notice"),
    ):
        if not tags.get(key):
            issues.append(_issue(severity, key, f"No {key}; link previews will guess."))
    image = tags.get("og:image")
    if image and not _is_absolute(image):
        issues.append(_issue("warning", "og:image", "og:image must be an absolute URL."))
    return issues


# --- seo.html_audit: links ---------------------------------------------------------------

_GENERIC_ANCHORS = frozenset(
    {
        "click here",
        "here",
        "read more",
        "more",
        "learn more",
        "this",
        "link",
        "this link",
        "go",
        "continue",
    }
)


def _link_kind(href: str, url: str | None, site: str) -> str:
    lower = href.lower()
    if lower.startswith("#"):
        return "fragment"
    for scheme in ("mailto", "tel", "javascript"):
        if lower.startswith(scheme + ":"):
            return scheme
    if url is None or not _is_absolute(url):
        return "internal" if not re.match(r"^[a-z][a-z0-9+.-]*:", lower) else "other"
    if not site:
        return "external"
    return "internal" if _host(url) == site else "external"


def _link_audit(inputs: dict[str, Any]) -> dict[str, Any]:
    page = _parse(inputs["html"])
    page_url = inputs["page_url"].strip()
    if page_url:
        _absolute_url(page_url, "page_url")
    base = _base_url(page, page_url)
    site = _host(base) if base else ""
    links = []
    counts: Counter[str] = Counter()
    issues: list[Issue] = []
    for anchor in page.anchors:
        if "href" not in anchor:
            continue
        href = anchor["href"].strip()
        url = urljoin(base, href) if base else href
        text = " ".join("".join(anchor["_text"]).split())
        if not text:
            text = " ".join(a for a in anchor["_images"] if a.strip())
        rel = sorted(_rels(anchor))
        kind = _link_kind(href, url, site)
        counts[kind] += 1
        for flag in ("nofollow", "sponsored", "ugc"):
            counts[flag] += flag in rel
        if not text:
            counts["empty_anchor"] += 1
            issues.append(
                _issue("warning", href, "The link has no text (and no image alt): name it.")
            )
        elif text.lower() in _GENERIC_ANCHORS:
            issues.append(_issue("notice", href, f'"{text}" says nothing about the target.'))
        if kind == "javascript":
            issues.append(_issue("warning", href, "javascript: links cannot be crawled."))
        links.append(
            {
                "href": href,
                "url": url if _is_absolute(url) else None,
                "text": text,
                "type": kind,
                "rel": rel,
                "new_tab": anchor.get("target", "").lower() == "_blank",
            }
        )
    kinds = ("internal", "external", "fragment", "mailto", "tel", "javascript", "other")
    return {
        "total": len(links),
        "counts": {k: counts[k] for k in (*kinds, "nofollow", "sponsored", "ugc", "empty_anchor")},
        "links": links[: inputs["max_links"]],
        "issues": issues[: inputs["max_links"]],
    }


# --- seo.html_audit: image alt text ------------------------------------------------------

_GENERIC_ALTS = frozenset(
    {"image", "picture", "photo", "img", "graphic", "logo", "icon", "banner", "untitled"}
)
_FILENAME_ALT_RE = re.compile(
    r"^[\w-]+\.(?:jpe?g|png|gif|webp|avif|svg)$|^(?:img|dsc|image)[_-]?\d+", re.I
)
_MAX_ALT = 125


def _alt_problem(alt: str | None, decorative: bool, in_link: bool) -> str | None:
    if alt is None:
        return "missing"
    text = alt.strip()
    if not text:
        return "empty_in_link" if in_link else None if decorative else "empty"
    if _FILENAME_ALT_RE.search(text):
        return "filename"
    if text.lower() in _GENERIC_ALTS:
        return "generic"
    if re.match(r"^(?:an? )?(?:image|picture|photo) of\b", text, re.I):
        return "redundant_prefix"
    if len(text) > _MAX_ALT:
        return "too_long"
    return None


_ALT_ADVICE = {
    "missing": 'Add an alt attribute: describe the image, or alt="" if it is decorative.',
    "empty": 'Empty alt marks the image decorative; add role="presentation" if so, or describe it.',
    "empty_in_link": "The image is a link's only content: its alt must say where the link goes.",
    "filename": "The alt text is a file name; describe the image instead.",
    "generic": "The alt text is generic; say what the image shows.",
    "redundant_prefix": 'Drop "image of": screen readers already announce an image.',
    "too_long": f"Keep alt text under {_MAX_ALT} characters; move detail to a caption.",
}


def _image_audit(inputs: dict[str, Any]) -> dict[str, Any]:
    page = _parse(inputs["html"])
    images = []
    problems: Counter[str] = Counter()
    for image in page.images:
        alt = image.get("alt")
        decorative = image.get("role", "").lower() in ("presentation", "none") or (
            image.get("aria-hidden", "").lower() == "true"
        )
        problem = _alt_problem(alt, decorative, image["_in_link"])
        problems[problem or "ok"] += 1
        missing_size = not (image.get("width") and image.get("height"))
        problems["missing_dimensions"] += missing_size
        images.append(
            {
                "src": image.get("src", ""),
                "alt": alt,
                "problem": problem,
                "advice": _ALT_ADVICE.get(problem) if problem else None,
                "missing_dimensions": missing_size,
                "lazy": image.get("loading", "").lower() == "lazy",
            }
        )
    with_problems = sum(1 for i in images if i["problem"])
    return {
        "total": len(images),
        "ok": len(images) - with_problems,
        "with_problems": with_problems,
        "counts": {key: problems[key] for key in (*_ALT_ADVICE, "missing_dimensions")},
        "images": images[: inputs["max_images"]],
    }


# --- hreflang: shared validation ---------------------------------------------------------

_LANGUAGES = frozenset({
    "aa", "ab", "ae", "af", "ak", "am", "an", "ar", "as", "av", "ay", "az", "ba", "be", "bg", "bh",
    "bi", "bm", "bn", "bo", "br", "bs", "ca", "ce", "ch", "co", "cr", "cs", "cu", "cv", "cy", "da",
    "de", "dv", "dz", "ee", "el", "en", "eo", "es", "et", "eu", "fa", "ff", "fi", "fj", "fo", "fr",
    "fy", "ga", "gd", "gl", "gn", "gu", "gv", "ha", "he", "hi", "ho", "hr", "ht", "hu", "hy", "hz",
    "ia", "id", "ie", "ig", "ii", "ik", "io", "is", "it", "iu", "ja", "jv", "ka", "kg", "ki", "kj",
    "kk", "kl", "km", "kn", "ko", "kr", "ks", "ku", "kv", "kw", "ky", "la", "lb", "lg", "li", "ln",
    "lo", "lt", "lu", "lv", "mg", "mh", "mi", "mk", "ml", "mn", "mr", "ms", "mt", "my", "na", "nb",
    "nd", "ne", "ng", "nl", "nn", "no", "nr", "nv", "ny", "oc", "oj", "om", "or", "os", "pa", "pi",
    "pl", "ps", "pt", "qu", "rm", "rn", "ro", "ru", "rw", "sa", "sc", "sd", "se", "sg", "si", "sk",
    "sl", "sm", "sn", "so", "sq", "sr", "ss", "st", "su", "sv", "sw", "ta", "te", "tg", "th", "ti",
    "tk", "tl", "tn", "to", "tr", "ts", "tt", "tw", "ty", "ug", "uk", "ur", "uz", "ve", "vi", "vo",
    "wa", "wo", "xh", "yi", "yo", "za", "zh", "zu",
})  # fmt: skip
_REGIONS = frozenset({
    "ad", "ae", "af", "ag", "ai", "al", "am", "ao", "aq", "ar", "as", "at", "au", "aw", "ax", "az",
    "ba", "bb", "bd", "be", "bf", "bg", "bh", "bi", "bj", "bl", "bm", "bn", "bo", "bq", "br", "bs",
    "bt", "bv", "bw", "by", "bz", "ca", "cc", "cd", "cf", "cg", "ch", "ci", "ck", "cl", "cm", "cn",
    "co", "cr", "cu", "cv", "cw", "cx", "cy", "cz", "de", "dj", "dk", "dm", "do", "dz", "ec", "ee",
    "eg", "eh", "er", "es", "et", "fi", "fj", "fk", "fm", "fo", "fr", "ga", "gb", "gd", "ge", "gf",
    "gg", "gh", "gi", "gl", "gm", "gn", "gp", "gq", "gr", "gs", "gt", "gu", "gw", "gy", "hk", "hm",
    "hn", "hr", "ht", "hu", "id", "ie", "il", "im", "in", "io", "iq", "ir", "is", "it", "je", "jm",
    "jo", "jp", "ke", "kg", "kh", "ki", "km", "kn", "kp", "kr", "kw", "ky", "kz", "la", "lb", "lc",
    "li", "lk", "lr", "ls", "lt", "lu", "lv", "ly", "ma", "mc", "md", "me", "mf", "mg", "mh", "mk",
    "ml", "mm", "mn", "mo", "mp", "mq", "mr", "ms", "mt", "mu", "mv", "mw", "mx", "my", "mz", "na",
    "nc", "ne", "nf", "ng", "ni", "nl", "no", "np", "nr", "nu", "nz", "om", "pa", "pe", "pf", "pg",
    "ph", "pk", "pl", "pm", "pn", "pr", "ps", "pt", "pw", "py", "qa", "re", "ro", "rs", "ru", "rw",
    "sa", "sb", "sc", "sd", "se", "sg", "sh", "si", "sj", "sk", "sl", "sm", "sn", "so", "sr", "ss",
    "st", "sv", "sx", "sy", "sz", "tc", "td", "tf", "tg", "th", "tj", "tk", "tl", "tm", "tn", "to",
    "tr", "tt", "tv", "tw", "tz", "ua", "ug", "um", "us", "uy", "uz", "va", "vc", "ve", "vg", "vi",
    "vn", "vu", "wf", "ws", "ye", "yt", "za", "zm", "zw",
})  # fmt: skip
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


def _hreflang_audit(inputs: dict[str, Any]) -> dict[str, Any]:
    page = _parse(inputs["html"])
    page_url = inputs["page_url"].strip()
    if page_url:
        _absolute_url(page_url, "page_url")
    pairs = [
        (t.get("hreflang", "").strip(), t.get("href", "").strip())
        for t in page.link_tags
        if "alternate" in _rels(t) and "hreflang" in t
    ]
    issues = _hreflang_issues(pairs, page_url)
    if not pairs:
        issues.append(_issue("notice", "hreflang", "The page has no hreflang links."))
    return {
        "count": len(pairs),
        "tags": [
            {"hreflang": code, "href": href, "valid": _hreflang_problem(code) is None}
            for code, href in pairs
        ],
        "valid": not any(i["severity"] == "error" for i in issues),
        "issues": issues,
    }


class HtmlAuditEngine(ChoiceEngine):
    name = "seo.html_audit"
    choice = "audit"
    jobs = {
        "meta": _meta_audit,
        "links": _link_audit,
        "images": _image_audit,
        "hreflang": _hreflang_audit,
    }


# --- seo.tags ----------------------------------------------------------------------------


def _meta_tag(attribute: str, key: str, content: str) -> str:
    return f'<meta {attribute}="{key}" content="{html.escape(content, quote=True)}">'


def _social_tags(inputs: dict[str, Any]) -> dict[str, Any]:
    title = " ".join(inputs["title"].split())
    description = " ".join(inputs["description"].split())
    warnings = []
    url = inputs["url"].strip() and _absolute_url(inputs["url"], "url")
    image = inputs["image"].strip() and _absolute_url(inputs["image"], "image")
    if len(title) > 60:
        warnings.append(f"The title is {len(title)} characters; previews cut it near 60.")
    if len(description) > 160:
        warnings.append(
            f"The description is {len(description)} characters; previews cut it near 160."
        )
    if not image:
        warnings.append("No image: shares show a plain link; 1200x630 px works everywhere.")
    card = inputs["twitter_card"]
    if card == "summary_large_image" and not image:
        card = "summary"
        warnings.append("summary_large_image needs an image; using summary.")
    tags = [
        ("property", "og:type", inputs["type"]),
        ("property", "og:title", title),
        ("property", "og:description", description),
        ("property", "og:url", url),
        ("property", "og:site_name", inputs["site_name"].strip()),
        ("property", "og:locale", inputs["locale"]),
        ("property", "og:image", image),
        ("property", "og:image:alt", inputs["image_alt"].strip() if image else ""),
        ("name", "twitter:card", card),
        ("name", "twitter:title", title),
        ("name", "twitter:description", description),
        ("name", "twitter:image", image),
        ("name", "twitter:image:alt", inputs["image_alt"].strip() if image else ""),
        ("name", "twitter:site", _handle(inputs["twitter_site"])),
        ("name", "twitter:creator", _handle(inputs["twitter_creator"])),
    ]
    kept = [(a, k, c) for a, k, c in tags if c]
    if image and not inputs["image_alt"].strip():
        warnings.append("Add image_alt so screen-reader users know what the image shows.")
    return {
        "html": "\n".join(_meta_tag(*tag) for tag in kept),
        "tags": [{"attribute": a, "key": k, "content": c} for a, k, c in kept],
        "warnings": warnings,
    }


def _handle(value: str) -> str:
    value = value.strip()
    return "@" + value.lstrip("@") if value else ""


_HREFLANG_LINE_RE = re.compile(r"^([^\s,;|]+)[\s,;|]+(\S+)$")


def _hreflang_pairs(text: str) -> list[tuple[str, str]]:
    pairs = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = _HREFLANG_LINE_RE.match(line.strip())
        if not match:
            raise EngineError(
                f'Line {number}: write "<language code> <URL>", e.g. "en-GB https://example.com/uk/".'
            )
        code, url = match.groups()
        pairs.append((code, url))
    return pairs


def _hreflang_tags(inputs: dict[str, Any]) -> dict[str, Any]:
    pairs = _hreflang_pairs(inputs["alternates"])
    if inputs["x_default"].strip():
        pairs.append(("x-default", inputs["x_default"].strip()))
    if not pairs:
        raise EngineError("List at least one alternate: one line per language, code then URL.")
    issues = _hreflang_issues(pairs, "")
    if any(i["severity"] == "error" for i in issues):
        raise EngineError(" ".join(i["message"] for i in issues if i["severity"] == "error"))
    fmt = inputs["format"]
    if fmt == "html":
        lines = [f'<link rel="alternate" hreflang="{c}" href="{html.escape(u)}">' for c, u in pairs]
    elif fmt == "http_header":
        lines = ["Link: " + ", ".join(f'<{u}>; rel="alternate"; hreflang="{c}"' for c, u in pairs)]
    else:
        lines = [
            f'<xhtml:link rel="alternate" hreflang="{c}" href="{html.escape(u)}"/>'
            for c, u in pairs
        ]
    return {
        "code": "\n".join(lines),
        "count": len(pairs),
        "notes": [i["message"] for i in issues]
        + ["Put the same tags on every page of the group: each lists all the others and itself."],
    }


class TagsEngine(ChoiceEngine):
    name = "seo.tags"
    choice = "kind"
    jobs = {"social": _social_tags, "hreflang": _hreflang_tags}


# --- seo.url -----------------------------------------------------------------------------

TRACKING_PARAMETERS = frozenset(
    {
        "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "fbclid", "msclkid", "yclid", "twclid",
        "ttclid", "li_fat_id", "igshid", "mc_cid", "mc_eid", "_ga", "_gl", "_hsenc", "_hsmi",
        "mkt_tok", "oly_anon_id", "oly_enc_id", "vero_id", "rb_clickid", "s_cid", "ref_src",
        "srsltid", "spm",
    }
)  # fmt: skip
_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = "-._~"


def _is_tracking(name: str) -> bool:
    lower = name.lower()
    return lower.startswith(("utm_", "pk_", "mtm_")) or lower in TRACKING_PARAMETERS


def _normalise_path(path: str) -> str:
    # Decode only what never needs encoding, upper-case the remaining escapes.
    path = re.sub(
        r"%[0-9A-Fa-f]{2}",
        lambda m: (
            c
            if (c := unquote(m.group())).isalnum() and c.isascii() or c in _UNRESERVED
            else m.group().upper()
        ),
        path,
    )
    segments: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if len(segments) > 1:
                segments.pop()
        elif segment != ".":
            segments.append(segment)
    result = "/".join(segments)
    return result if result.startswith("/") else "/" + result


def _canonical(inputs: dict[str, Any]) -> dict[str, Any]:
    raw = inputs["url"].strip()
    if "://" not in raw:
        raw = "https://" + raw
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as error:
        raise EngineError(f"The URL cannot be parsed: {error}.") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise EngineError("Give an http(s) URL with a host, such as https://example.com/page.")
    scheme = "https" if inputs["force_https"] else parts.scheme.lower()
    host = parts.hostname.rstrip(".").encode("idna").decode("ascii").lower()
    if inputs["www"] == "remove":
        host = host.removeprefix("www.")
    elif inputs["www"] == "add" and not host.startswith("www."):
        host = "www." + host
    # A default port goes, including http's :80 on a URL moved to https.
    default_ports = {_DEFAULT_PORTS[scheme], _DEFAULT_PORTS[parts.scheme.lower()]}
    netloc = host if port is None or port in default_ports else f"{host}:{port}"
    path = _normalise_path(parts.path)
    if inputs["remove_index"]:
        path = re.sub(r"/index\.(?:html?|php|aspx?)$", "/", path)
    last = path.rsplit("/", 1)[-1]
    if inputs["trailing_slash"] == "add" and "." not in last and not path.endswith("/"):
        path += "/"
    elif inputs["trailing_slash"] == "remove" and path != "/":
        path = path.rstrip("/") or "/"
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    removed = [name for name, _ in pairs if inputs["strip_tracking"] and _is_tracking(name)]
    kept = [(n, v) for n, v in pairs if not (inputs["strip_tracking"] and _is_tracking(n))]
    if inputs["sort_query"]:
        kept.sort()
    fragment = "" if inputs["remove_fragment"] else parts.fragment
    url = urlunsplit((scheme, netloc, path, urlencode(kept, quote_via=quote), fragment))
    return {"url": url, "changed": url != inputs["url"].strip(), "removed_parameters": removed}


UTM_FIELDS = ("source", "medium", "campaign", "term", "content", "id")


def _utm_build(inputs: dict[str, Any]) -> dict[str, Any]:
    url = _absolute_url(inputs["url"], "url")
    values = {field: _clean_utm(inputs[field], inputs["lowercase"]) for field in UTM_FIELDS}
    missing = [f"utm_{f}" for f in ("source", "medium", "campaign") if not values[f]]
    if missing:
        raise EngineError(
            f"Give {', '.join(missing)}: every campaign link needs source, medium and campaign."
        )
    parts = urlsplit(url)
    kept = [
        (n, v)
        for n, v in parse_qsl(parts.query, keep_blank_values=True)
        if not n.lower().startswith("utm_")
    ]
    utm = [(f"utm_{f}", values[f]) for f in UTM_FIELDS if values[f]]
    query = urlencode(kept + utm, quote_via=quote)
    warnings = []
    if parts.fragment:
        warnings.append("The URL has a #fragment; the parameters go before it, as they must.")
    if any(v != inputs[f].strip() for f, v in values.items() if v):
        warnings.append(
            "Values were trimmed, spaces became underscores"
            + (" and case was lowered." if inputs["lowercase"] else ".")
        )
    return {
        "url": urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment)),
        "parameters": dict(utm),
        "warnings": warnings,
    }


def _clean_utm(value: str, lowercase: bool) -> str:
    value = "_".join(value.split())
    return value.lower() if lowercase else value


def _utm_parse(inputs: dict[str, Any]) -> dict[str, Any]:
    url = _absolute_url(inputs["url"], "url")
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    utm: dict[str, str | None] = dict.fromkeys(UTM_FIELDS)
    other, tracking = [], []
    for name, value in pairs:
        lower = name.lower()
        if lower.startswith("utm_") and lower[4:] in utm:
            utm[lower[4:]] = value
        elif _is_tracking(name):
            tracking.append({"name": name, "value": value})
        else:
            other.append({"name": name, "value": value})
    issues = [f"utm_{f} is missing." for f in ("source", "medium", "campaign") if not utm[f]]
    issues += [
        f'utm_{f} has capitals; analytics treats "{v}" and "{v.lower()}" as different.'
        for f, v in utm.items()
        if v and v != v.lower()
    ]
    issues += [f"utm_{f} contains spaces." for f, v in utm.items() if v and " " in v]
    clean_query = urlencode([(o["name"], o["value"]) for o in other], quote_via=quote)
    return {
        "base_url": urlunsplit(
            (parts.scheme, parts.netloc, parts.path, clean_query, parts.fragment)
        ),
        "utm": utm,
        "click_ids": tracking,
        "other_parameters": other,
        "issues": issues,
    }


class UrlEngine(ChoiceEngine):
    name = "seo.url"
    jobs = {"canonical": _canonical, "utm_build": _utm_build, "utm_parse": _utm_parse}


# --- seo.robots --------------------------------------------------------------------------

_DIRECTIVE_RE = re.compile(r"^\s*([A-Za-z-]+)\s*:\s*(.*?)\s*$")
_KNOWN_DIRECTIVES = {"user-agent", "allow", "disallow", "sitemap", "crawl-delay", "host"}


def _parse_robots(text: str) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """Groups (agents, rules, crawl delay), sitemap URLs and problems, per RFC 9309."""
    groups: list[dict[str, Any]] = []
    sitemaps: list[str] = []
    problems: list[str] = []
    current: dict[str, Any] | None = None
    last_was_agent = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0]
        if not line.strip():
            continue
        match = _DIRECTIVE_RE.match(line)
        if not match:
            problems.append(f'Line {number}: "{line.strip()}" is not "directive: value".')
            continue
        key, value = match.group(1).lower(), match.group(2)
        if key == "user-agent":
            if not last_was_agent:
                current = {"agents": [], "rules": [], "crawl_delay": None}
                groups.append(current)
            current["agents"].append(value.lower())
            last_was_agent = True
            continue
        last_was_agent = False
        if key == "sitemap":
            sitemaps.append(value)
        elif key in ("allow", "disallow"):
            if current is None:
                problems.append(
                    f"Line {number}: {match.group(1)} comes before any User-agent line."
                )
            elif value:
                current["rules"].append((key == "allow", value, number))
        elif key == "crawl-delay" and current is not None:
            try:
                current["crawl_delay"] = float(value)
            except ValueError:
                problems.append(f"Line {number}: Crawl-delay must be a number of seconds.")
        elif key not in _KNOWN_DIRECTIVES:
            problems.append(f'Line {number}: "{match.group(1)}" is not a robots.txt directive.')
    return groups, sitemaps, problems


def _pick_group(
    groups: list[dict[str, Any]], user_agent: str
) -> tuple[str | None, list[dict[str, Any]]]:
    """The groups of the most specific user-agent that matches (Google's rule), else '*'."""
    token = re.split(r"[/\s]", user_agent.strip().lower(), maxsplit=1)[0]
    names = {a for g in groups for a in g["agents"] if a != "*" and token.startswith(a)}
    best = (
        max(names, key=len) if names else ("*" if any("*" in g["agents"] for g in groups) else None)
    )
    return best, [g for g in groups if best in g["agents"]]


def _rule_regex(pattern: str) -> re.Pattern[str]:
    anchored = pattern.endswith("$")
    body = re.escape(pattern.rstrip("$") if anchored else pattern).replace(r"\*", ".*")
    return re.compile(body + ("$" if anchored else ""))


def _robots_path(url: str) -> str:
    parts = urlsplit(
        url if "://" in url else "http://x" + (url if url.startswith("/") else "/" + url)
    )
    path = quote(unquote(parts.path or "/"), safe="/%:@!$&'()*+,;=-._~")
    return path + (f"?{parts.query}" if parts.query else "")


def _robots_test(inputs: dict[str, Any]) -> dict[str, Any]:
    urls = _lines(inputs["urls"])
    if not urls:
        raise EngineError("List the URLs or paths to test in urls, one per line.")
    groups, sitemaps, problems = _parse_robots(inputs["robots"])
    agent, chosen = _pick_group(groups, inputs["user_agent"])
    rules = [rule for group in chosen for rule in group["rules"]]
    results = []
    for url in urls:
        path = _robots_path(url)
        matches = [r for r in rules if _rule_regex(r[1]).match(path)]
        # The longest pattern wins; on a tie, allow wins.
        best = max(matches, key=lambda r: (len(r[1]), r[0]), default=None)
        allowed = path == "/robots.txt" or best is None or best[0]
        results.append(
            {
                "url": url,
                "allowed": allowed,
                "rule": f"{'Allow' if best[0] else 'Disallow'}: {best[1]}" if best else None,
                "line": best[2] if best else None,
            }
        )
    delays = [g["crawl_delay"] for g in chosen if g["crawl_delay"] is not None]
    return {
        "user_agent": inputs["user_agent"],
        "group": agent,
        "results": results,
        "sitemaps": sitemaps,
        "crawl_delay": delays[0] if delays else None,
        "problems": problems,
    }


AI_CRAWLERS = (
    "GPTBot", "ChatGPT-User", "OAI-SearchBot", "ClaudeBot", "anthropic-ai", "Claude-Web",
    "CCBot", "Google-Extended", "Applebot-Extended", "PerplexityBot", "Bytespider",
    "Meta-ExternalAgent", "Amazonbot", "cohere-ai", "Diffbot", "Omgilibot",
)  # fmt: skip


def _robots_paths(text: str, field: str, warnings: list[str]) -> list[str]:
    paths = []
    for path in _lines(text):
        if _is_absolute(path):
            parts = urlsplit(path)
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            warnings.append(f"{field}: kept only the path of {path}; rules apply per host.")
        if not path.startswith(("/", "*")):
            warnings.append(f'{field}: "{path}" did not start with "/"; added it.')
            path = "/" + path
        paths.append(path)
    return list(dict.fromkeys(paths))


def _robots_generate(inputs: dict[str, Any]) -> dict[str, Any]:
    warnings: list[str] = []
    disallow = _robots_paths(inputs["disallow"], "disallow", warnings)
    allow = _robots_paths(inputs["allow"], "allow", warnings)
    sitemaps = [_absolute_url(url, "Each sitemap") for url in _lines(inputs["sitemaps"])]
    lines = ["User-agent: *"]
    if inputs["block_everything"]:
        lines.append("Disallow: /")
        warnings.append("Everything is blocked: use this only for staging sites.")
    else:
        lines += [f"Allow: {p}" for p in allow] + [f"Disallow: {p}" for p in disallow]
        if not allow and not disallow:
            lines.append("Disallow:")
    if inputs["crawl_delay"]:
        lines.append(f"Crawl-delay: {inputs['crawl_delay']}")
        warnings.append("Google ignores Crawl-delay; Bing and Yandex honour it.")
    if inputs["block_ai_crawlers"]:
        lines.append("")
        lines += [f"User-agent: {bot}" for bot in AI_CRAWLERS] + ["Disallow: /"]
    if sitemaps:
        lines.append("")
        lines += [f"Sitemap: {url}" for url in sitemaps]
    else:
        warnings.append("No sitemap listed; adding one helps crawlers find every page.")
    return {"robots_txt": "\n".join(lines) + "\n", "warnings": warnings}


class RobotsEngine(ChoiceEngine):
    name = "seo.robots"
    jobs = {"test": _robots_test, "generate": _robots_generate}


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


def _sitemap_entry(line: str, inputs: dict[str, Any]) -> tuple[dict[str, str], str | None]:
    url, *extra = line.split()
    entry = {"loc": url}
    if not _is_absolute(url):
        return entry, "not an absolute http(s) URL"
    if len(url) > 2048:
        return entry, "longer than 2,048 characters"
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
    skipped = []
    for number, line in enumerate(inputs["urls"].splitlines(), start=1):
        if not line.strip():
            continue
        entry, problem = _sitemap_entry(line.strip(), inputs)
        if problem:
            skipped.append({"line": number, "reason": f"{entry['loc']}: {problem}."})
        elif entry["loc"] in entries:
            skipped.append({"line": number, "reason": f"{entry['loc']}: listed twice."})
        else:
            entries[entry["loc"]] = entry
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


# --- seo.jsonld --------------------------------------------------------------------------


def _script(data: dict[str, Any]) -> str:
    # "</" inside a string would close the script element early.
    body = json.dumps(data, indent=2, ensure_ascii=False).replace("</", "<\\/")
    return f'<script type="application/ld+json">\n{body}\n</script>'


def _optional_url(inputs: dict[str, Any], field: str) -> str | None:
    value = inputs.get(field, "").strip()
    return _absolute_url(value, field) if value else None


def _date(value: str, field: str, with_time: bool = False) -> str | None:
    value = value.strip()
    if not value:
        return None
    try:
        if with_time and "T" in value:
            datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        else:
            datetime.date.fromisoformat(value)
    except ValueError:
        example = "2024-05-01 or 2024-05-01T19:30:00+02:00" if with_time else "2024-05-01"
        raise EngineError(f"{field} must be an ISO 8601 date such as {example}.") from None
    return value


def _duration(minutes: int) -> str | None:
    if not minutes:
        return None
    hours, rest = divmod(minutes, 60)
    return "PT" + (f"{hours}H" if hours else "") + (f"{rest}M" if rest else "")


def _seconds_duration(seconds: int) -> str | None:
    if not seconds:
        return None
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return "PT" + "".join(f"{v}{u}" for v, u in ((hours, "H"), (minutes, "M"), (secs, "S")) if v)


def _prune(value: Any) -> Any:
    """Drop empty values so the markup carries only what was given."""
    if isinstance(value, dict):
        pruned = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [v for v in (_prune(v) for v in value) if v not in (None, "", [], {})]
    return value


def _address(inputs: dict[str, Any]) -> dict[str, Any] | None:
    address = _prune(
        {
            "@type": "PostalAddress",
            "streetAddress": inputs["street_address"].strip(),
            "addressLocality": inputs["city"].strip(),
            "addressRegion": inputs["region"].strip(),
            "postalCode": inputs["postal_code"].strip(),
            "addressCountry": inputs["country"].strip(),
        }
    )
    return address if len(address) > 1 else None


def _rating(inputs: dict[str, Any]) -> dict[str, Any] | None:
    value, count = inputs["rating_value"], inputs["rating_count"]
    if value is None:
        return None
    if not count:
        raise EngineError("rating_count must be at least 1 when rating_value is given.")
    if value > inputs.get("best_rating", 5):
        raise EngineError("rating_value cannot exceed best_rating.")
    return {
        "@type": "AggregateRating",
        "ratingValue": value,
        "ratingCount": count,
        "bestRating": inputs.get("best_rating", 5),
    }


def _faq(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    pairs: list[list[str]] = []
    for line in inputs["faq"].splitlines():
        match = re.match(r"^\s*([QA])\s*[:.)]\s*(.*)$", line, re.IGNORECASE)
        if match and match.group(1).upper() == "Q":
            pairs.append([match.group(2).strip(), ""])
        elif match and pairs:
            pairs[-1][1] = (pairs[-1][1] + " " + match.group(2)).strip()
        elif pairs and line.strip():
            pairs[-1][1] = (pairs[-1][1] + " " + line.strip()).strip()
    pairs = [p for p in pairs if p[0]]
    if not pairs:
        raise EngineError('Write each question on a line starting "Q:" and its answer after "A:".')
    unanswered = [q for q, a in pairs if not a]
    if unanswered:
        raise EngineError(f'"{unanswered[0]}" has no answer; add a line starting "A:".')
    data = {
        "@context": "https://schema.org",
        "@type": "FAQPage",
        "mainEntity": [
            {"@type": "Question", "name": q, "acceptedAnswer": {"@type": "Answer", "text": a}}
            for q, a in pairs
        ],
    }
    warnings = ["Google shows FAQ rich results only for well-known government and health sites."]
    return data, warnings


def _howto(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    steps = _lines(inputs["steps"])
    if len(steps) < 2:
        raise EngineError("Give at least two steps, one per line.")
    data = {
        "@context": "https://schema.org",
        "@type": "HowTo",
        "name": inputs["name"].strip(),
        "description": inputs["description"].strip(),
        "image": _optional_url(inputs, "image"),
        "totalTime": _duration(inputs["total_minutes"]),
        "supply": [{"@type": "HowToSupply", "name": s} for s in _lines(inputs["supplies"])],
        "tool": [{"@type": "HowToTool", "name": t} for t in _lines(inputs["tools"])],
        "step": [
            {"@type": "HowToStep", "position": i, "text": re.sub(r"^\d+[.)]\s*", "", step)}
            for i, step in enumerate(steps, start=1)
        ],
    }
    warnings = [] if inputs["description"].strip() else ["Add a description of the result."]
    return data, warnings


def _article(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    headline = inputs["headline"].strip()
    warnings = []
    if len(headline) > 110:
        warnings.append("Keep the headline under 110 characters for Google's article features.")
    images = [_absolute_url(url, "Each image") for url in _lines(inputs["images"])]
    if not images:
        warnings.append(
            "Add images (16:9, 4:3 and 1:1, at least 1200 px wide) to be eligible for rich results."
        )
    published = _date(inputs["date_published"], "date_published", with_time=True)
    if not published:
        warnings.append("Add date_published so Google can show the date.")
    if not inputs["author_name"].strip():
        warnings.append("Add the author's name.")
    data = {
        "@context": "https://schema.org",
        "@type": inputs["article_type"],
        "headline": headline,
        "description": inputs["description"].strip(),
        "image": images,
        "datePublished": published,
        "dateModified": _date(inputs["date_modified"], "date_modified", with_time=True),
        "author": {
            "@type": inputs["author_type"],
            "name": inputs["author_name"].strip(),
            "url": _optional_url(inputs, "author_url"),
        },
        "publisher": {
            "@type": "Organization",
            "name": inputs["publisher_name"].strip(),
            "logo": {"@type": "ImageObject", "url": _optional_url(inputs, "publisher_logo")},
        },
        "mainEntityOfPage": _optional_url(inputs, "url"),
    }
    return data, warnings


def _product(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    offer = None
    if inputs["price"] is not None:
        offer = {
            "@type": "Offer",
            "price": f"{inputs['price']:.2f}",
            "priceCurrency": inputs["currency"],
            "availability": f"https://schema.org/{inputs['availability']}",
            "itemCondition": f"https://schema.org/{inputs['condition']}",
            "url": _optional_url(inputs, "url"),
            "priceValidUntil": _date(inputs["price_valid_until"], "price_valid_until"),
        }
    rating = _rating(inputs)
    if offer is None and rating is None:
        raise EngineError("Google needs an offer or a rating: give a price or rating_value.")
    images = [_absolute_url(url, "Each image") for url in _lines(inputs["images"])]
    warnings = [] if images else ["Add at least one image; product results show one."]
    if not (inputs["sku"].strip() or inputs["gtin"].strip()):
        warnings.append("Add a GTIN or SKU so Google can match the product.")
    gtin = re.sub(r"\D", "", inputs["gtin"])
    if inputs["gtin"].strip() and len(gtin) not in (8, 12, 13, 14):
        raise EngineError("gtin must have 8, 12, 13 or 14 digits.")
    data = {
        "@context": "https://schema.org",
        "@type": "Product",
        "name": inputs["name"].strip(),
        "description": inputs["description"].strip(),
        "image": images,
        "sku": inputs["sku"].strip(),
        "gtin": gtin,
        "brand": {"@type": "Brand", "name": inputs["brand"].strip()},
        "offers": offer,
        "aggregateRating": rating,
    }
    return data, warnings


_DAY_CODES = {
    "mo": "Monday", "tu": "Tuesday", "we": "Wednesday", "th": "Thursday", "fr": "Friday",
    "sa": "Saturday", "su": "Sunday",
}  # fmt: skip
_DAY_ORDER = list(_DAY_CODES)
_HOURS_RE = re.compile(
    r"^([A-Za-z]{2})(?:\s*-\s*([A-Za-z]{2}))?((?:\s*,\s*[A-Za-z]{2})*)\s+"
    r"(\d{1,2}:\d{2})\s*-\s*(\d{1,2}:\d{2})$"
)


def _opening_hours(text: str) -> list[dict[str, Any]]:
    specs = []
    for line in _lines(text):
        match = _HOURS_RE.match(line)
        if not match or any(
            d and d.lower() not in _DAY_CODES for d in (match.group(1), match.group(2))
        ):
            raise EngineError(
                f'"{line}": write opening hours as "Mo-Fr 09:00-17:30" or "Sa 10:00-14:00".'
            )
        first, last, more, opens, closes = match.groups()
        start = _DAY_ORDER.index(first.lower())
        end = _DAY_ORDER.index(last.lower()) if last else start
        days = (
            _DAY_ORDER[start : end + 1]
            if end >= start
            else _DAY_ORDER[start:] + _DAY_ORDER[: end + 1]
        )
        days += [d.strip().lower() for d in more.split(",") if d.strip()]
        if any(d not in _DAY_CODES for d in days):
            raise EngineError(f'"{line}": days are Mo, Tu, We, Th, Fr, Sa, Su.')
        specs.append(
            {
                "@type": "OpeningHoursSpecification",
                "dayOfWeek": [_DAY_CODES[d] for d in days],
                "opens": opens.zfill(5),
                "closes": closes.zfill(5),
            }
        )
    return specs


def _local_business(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    address = _address(inputs)
    if address is None or "streetAddress" not in address or "addressLocality" not in address:
        raise EngineError("Google needs the address: give street_address and city at least.")
    warnings = []
    if not inputs["telephone"].strip():
        warnings.append("Add a telephone number.")
    geo = None
    if inputs["latitude"] is not None and inputs["longitude"] is not None:
        geo = {
            "@type": "GeoCoordinates",
            "latitude": inputs["latitude"],
            "longitude": inputs["longitude"],
        }
    elif inputs["latitude"] is not None or inputs["longitude"] is not None:
        raise EngineError("Give both latitude and longitude, or neither.")
    data = {
        "@context": "https://schema.org",
        "@type": inputs["business_type"],
        "name": inputs["name"].strip(),
        "image": _optional_url(inputs, "image"),
        "url": _optional_url(inputs, "url"),
        "telephone": inputs["telephone"].strip(),
        "priceRange": inputs["price_range"].strip(),
        "address": address,
        "geo": geo,
        "openingHoursSpecification": _opening_hours(inputs["opening_hours"]),
    }
    return data, warnings


def _breadcrumbs(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    items = []
    lines = _lines(inputs["trail"])
    for position, line in enumerate(lines, start=1):
        name, _, url = (
            (part.strip() for part in line.rpartition("|")) if "|" in line else (line, "", "")
        )
        if not name:
            raise EngineError(f'Line {position}: write "Name | URL".')
        item: dict[str, Any] = {"@type": "ListItem", "position": position, "name": name}
        if url:
            item["item"] = _absolute_url(url, f"The URL of {name}")
        elif position < len(lines):
            raise EngineError(
                f'"{name}" needs a URL; only the last crumb (the current page) may omit it.'
            )
        items.append(item)
    if not items:
        raise EngineError('List the crumbs one per line, "Name | URL", from the home page down.')
    warnings = ["One crumb is not a trail; start from the home page."] if len(items) == 1 else []
    return {
        "@context": "https://schema.org",
        "@type": "BreadcrumbList",
        "itemListElement": items,
    }, warnings


_ATTENDANCE = {
    "offline": "OfflineEventAttendanceMode",
    "online": "OnlineEventAttendanceMode",
    "mixed": "MixedEventAttendanceMode",
}


def _event(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    start = _date(inputs["start_date"], "start_date", with_time=True)
    if not start:
        raise EngineError("Google needs start_date, such as 2025-09-12T19:00:00+01:00.")
    mode = inputs["attendance_mode"]
    locations: list[dict[str, Any]] = []
    if mode in ("offline", "mixed"):
        address = _address(inputs)
        if not inputs["venue_name"].strip() or address is None:
            raise EngineError("An in-person event needs venue_name and an address.")
        locations.append(
            {"@type": "Place", "name": inputs["venue_name"].strip(), "address": address}
        )
    if mode in ("online", "mixed"):
        online = _optional_url(inputs, "online_url")
        if not online:
            raise EngineError("An online event needs online_url.")
        locations.append({"@type": "VirtualLocation", "url": online})
    offer = None
    if inputs["price"] is not None:
        offer = {
            "@type": "Offer",
            "price": f"{inputs['price']:.2f}",
            "priceCurrency": inputs["currency"],
            "availability": f"https://schema.org/{inputs['availability']}",
            "url": _optional_url(inputs, "ticket_url"),
            "validFrom": _date(inputs["tickets_on_sale"], "tickets_on_sale", with_time=True),
        }
    warnings = [] if offer else ["Add a price (0 for free events) to show ticket details."]
    if not inputs["image"].strip():
        warnings.append("Add an image; event results show one.")
    data = {
        "@context": "https://schema.org",
        "@type": "Event",
        "name": inputs["name"].strip(),
        "description": inputs["description"].strip(),
        "startDate": start,
        "endDate": _date(inputs["end_date"], "end_date", with_time=True),
        "eventAttendanceMode": f"https://schema.org/{_ATTENDANCE[mode]}",
        "eventStatus": f"https://schema.org/{inputs['status']}",
        "location": locations[0] if len(locations) == 1 else locations,
        "image": _optional_url(inputs, "image"),
        "organizer": {
            "@type": "Organization",
            "name": inputs["organizer_name"].strip(),
            "url": _optional_url(inputs, "organizer_url"),
        },
        "performer": {"@type": "PerformingGroup", "name": inputs["performer"].strip()},
        "offers": offer,
    }
    return data, warnings


def _organization(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    same_as = [_absolute_url(url, "Each same_as profile") for url in _lines(inputs["same_as"])]
    warnings = [f"Add {f}." for f in ("url", "logo") if not inputs[f].strip()]
    contact = None
    if inputs["telephone"].strip() or inputs["email"].strip():
        contact = {
            "@type": "ContactPoint",
            "contactType": inputs["contact_type"],
            "telephone": inputs["telephone"].strip(),
            "email": inputs["email"].strip(),
        }
    data = {
        "@context": "https://schema.org",
        "@type": inputs["organization_type"],
        "name": inputs["name"].strip(),
        "legalName": inputs["legal_name"].strip(),
        "url": _optional_url(inputs, "url"),
        "logo": _optional_url(inputs, "logo"),
        "description": inputs["description"].strip(),
        "foundingDate": _date(inputs["founding_date"], "founding_date"),
        "address": _address(inputs),
        "contactPoint": contact,
        "sameAs": same_as,
    }
    return data, warnings


def _recipe(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    images = [_absolute_url(url, "Each image") for url in _lines(inputs["images"])]
    if not images:
        raise EngineError("Google needs at least one image URL for a recipe.")
    ingredients = _lines(inputs["ingredients"])
    steps = _lines(inputs["instructions"])
    warnings = [
        f"Add {name}."
        for name, v in (("ingredients", ingredients), ("instructions", steps))
        if not v
    ]
    total = inputs["prep_minutes"] + inputs["cook_minutes"]
    data = {
        "@context": "https://schema.org",
        "@type": "Recipe",
        "name": inputs["name"].strip(),
        "description": inputs["description"].strip(),
        "image": images,
        "author": {"@type": "Person", "name": inputs["author_name"].strip()},
        "prepTime": _duration(inputs["prep_minutes"]),
        "cookTime": _duration(inputs["cook_minutes"]),
        "totalTime": _duration(total),
        "recipeYield": inputs["recipe_yield"].strip(),
        "recipeCategory": inputs["category"].strip(),
        "recipeCuisine": inputs["cuisine"].strip(),
        "keywords": inputs["keywords"].strip(),
        "nutrition": {"@type": "NutritionInformation", "calories": f"{inputs['calories']} calories"}
        if inputs["calories"]
        else None,
        "recipeIngredient": ingredients,
        "recipeInstructions": [
            {"@type": "HowToStep", "text": re.sub(r"^\d+[.)]\s*", "", s)} for s in steps
        ],
        "aggregateRating": _rating(inputs),
    }
    return data, warnings


def _video(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    thumbnails = [_absolute_url(url, "Each thumbnail") for url in _lines(inputs["thumbnail_urls"])]
    if not thumbnails:
        raise EngineError("Google needs at least one thumbnail URL for a video.")
    uploaded = _date(inputs["upload_date"], "upload_date", with_time=True)
    if not uploaded:
        raise EngineError("Google needs upload_date, such as 2024-05-01T08:00:00+00:00.")
    content, embed = _optional_url(inputs, "content_url"), _optional_url(inputs, "embed_url")
    warnings = (
        [] if content or embed else ["Add content_url or embed_url so Google can fetch the video."]
    )
    if not inputs["description"].strip():
        warnings.append("Add a description.")
    data = {
        "@context": "https://schema.org",
        "@type": "VideoObject",
        "name": inputs["name"].strip(),
        "description": inputs["description"].strip(),
        "thumbnailUrl": thumbnails,
        "uploadDate": uploaded,
        "duration": _seconds_duration(inputs["duration_seconds"]),
        "contentUrl": content,
        "embedUrl": embed,
        "expires": _date(inputs["expires"], "expires", with_time=True),
    }
    return data, warnings


_SCHEMAS: dict[str, Callable[[dict[str, Any]], tuple[dict[str, Any], list[str]]]] = {
    "faq": _faq,
    "howto": _howto,
    "article": _article,
    "product": _product,
    "local_business": _local_business,
    "breadcrumbs": _breadcrumbs,
    "event": _event,
    "organization": _organization,
    "recipe": _recipe,
    "video": _video,
}


class JsonLdEngine(ChoiceEngine):
    """Builds the chosen schema.org type, drops empty values, and wraps it in its tag."""

    name = "seo.jsonld"
    choice = "schema"
    jobs = _SCHEMAS

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        data, warnings = self.jobs[params[self.choice]](inputs)
        data = _prune(data)
        return {"json_ld": data, "script": _script(data), "warnings": warnings}


ENGINES: tuple[Engine, ...] = (
    HtmlAuditEngine(),
    JsonLdEngine(),
    RedirectsEngine(),
    RobotsEngine(),
    SitemapEngine(),
    TagsEngine(),
    UrlEngine(),
)
