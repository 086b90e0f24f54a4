"""``seo.html_audit``: meta tags, links, image alt texts and hreflang tags of an HTML page."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any
from urllib.parse import urljoin

from engines.base import ChoiceEngine
from engines.web._helpers import Issue, _absolute_url, _host, _is_absolute, _issue
from engines.web.hreflang import _hreflang_issues, _hreflang_problem
from engines.web.page import _base_url, _meta, _parse, _rels
from engines.web.serp import pixel_width

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
