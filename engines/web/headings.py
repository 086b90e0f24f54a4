"""``seo.headings``: heading outline of HTML or Markdown, with structure issues."""

from __future__ import annotations

import html.parser
import re
from typing import Any

from engines.base import Engine

# --- heading structure -------------------------------------------------------------------

_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE_RE = re.compile(r"^ {0,3}(```|~~~)")
_HTML_HEADING_RE = re.compile(r"<h[1-6][\s>]", re.IGNORECASE)
_MD_LINK_RE = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MD_EMPHASIS_RE = re.compile(r"(\*\*|__|\*|_|`)")


def _clean_markdown(text: str) -> str:
    return " ".join(_MD_EMPHASIS_RE.sub("", _MD_LINK_RE.sub(r"\1", text)).split())


def _markdown_headings(document: str) -> list[tuple[int, str]]:
    headings: list[tuple[int, str]] = []
    in_fence = None
    previous = ""  # the previous line, if it could be a setext heading's text
    for line in document.splitlines():
        fence = _FENCE_RE.match(line)
        if in_fence:
            if fence and fence.group(1) == in_fence:
                in_fence = None
            continue
        if fence:
            in_fence = fence.group(1)
            previous = ""
            continue
        atx = _ATX_RE.match(line)
        if atx:
            headings.append((len(atx.group(1)), _clean_markdown(atx.group(2) or "")))
            previous = ""
            continue
        setext = _SETEXT_RE.match(line)
        if setext and previous:
            headings.append((1 if setext.group(1)[0] == "=" else 2, _clean_markdown(previous)))
            previous = ""
            continue
        stripped = line.strip()
        is_text = bool(stripped) and not stripped.startswith(("-", "*", "+", ">", "|", "<"))
        previous = stripped if is_text else ""
    return headings


class _HeadingParser(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.headings: list[tuple[int, str]] = []
        self._level = 0
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self._level = int(tag[1])
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if self._level and tag == f"h{self._level}":
            self.headings.append((self._level, " ".join("".join(self._text).split())))
            self._level = 0

    def handle_data(self, data: str) -> None:
        if self._level:
            self._text.append(data)


def _html_headings(document: str) -> list[tuple[int, str]]:
    parser = _HeadingParser()
    parser.feed(document)
    parser.close()
    return parser.headings


def _heading_issues(headings: list[tuple[int, str]], max_h1_chars: int) -> list[str]:
    if not headings:
        return ["The document has no headings."]
    issues = []
    h1s = [text for level, text in headings if level == 1]
    if not h1s:
        issues.append("There is no H1 heading; give the page exactly one.")
    elif len(h1s) > 1:
        issues.append(f"There are {len(h1s)} H1 headings; give the page exactly one.")
    if h1s and headings[0][0] != 1:
        issues.append(f"The first heading is an H{headings[0][0]}, not the H1.")
    previous_level = 0
    seen: set[tuple[int, str]] = set()
    for level, text in headings:
        label = f'H{level} "{text}"' if text else f"H{level}"
        if previous_level and level > previous_level + 1:
            issues.append(f"{label} skips a level: it follows an H{previous_level}.")
        if not text:
            issues.append(f"An H{level} heading is empty.")
        elif (level, text.lower()) in seen:
            issues.append(f"{label} appears more than once.")
        elif level == 1 and len(text) > max_h1_chars:
            issues.append(f"{label} is {len(text)} characters; keep the H1 under {max_h1_chars}.")
        seen.add((level, text.lower()))
        previous_level = level
    return issues


class HeadingsEngine(Engine):
    name = "seo.headings"
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["max_h1_chars"],
        "properties": {"max_h1_chars": {"type": "integer", "minimum": 1}},
    }

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        document = inputs["document"]
        kind = inputs["format"]
        if kind == "auto":
            kind = "html" if _HTML_HEADING_RE.search(document) else "markdown"
        headings = _html_headings(document) if kind == "html" else _markdown_headings(document)
        issues = _heading_issues(headings, params["max_h1_chars"])
        return {
            "format": kind,
            "headings": [{"level": level, "text": text} for level, text in headings],
            "outline": "\n".join(
                f"{'  ' * (level - 1)}H{level} {text}".rstrip() for level, text in headings
            ),
            "ok": not issues,
            "issues": issues,
        }
