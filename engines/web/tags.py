"""``seo.tags``: Open Graph and Twitter card tags, hreflang tags."""

from __future__ import annotations

import html
import html.parser
import re
from typing import Any

from engines.base import ChoiceEngine, EngineError
from engines.web._helpers import _absolute_url
from engines.web.hreflang import _hreflang_issues

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
