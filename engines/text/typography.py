"""Typography by locale, a job of ``text.transform``."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

QUOTE_STYLES = {
    "en": ("“", "”", "‘", "’"),
    "de": ("„", "“", "‚", "‘"),
    "fr": ("«\u00a0", "\u00a0»", "‹\u00a0", "\u00a0›"),
}
# Spans left as typed: fenced and inline code, and HTML tags.
_PROTECTED_RE = re.compile(r"```.*?```|`[^`\n]*`|<[^<>\n]+>", re.DOTALL)
_OPENING_CONTEXT = " \t\n([{<“‘„‚«‹—–-/"
_UNITS = (
    r"%|‰|°C|°F|kg|g|mg|km|m|cm|mm|µm|mi|ft|in|lb|lbs|oz|l|ml|kWh|kW|W|V|A|Hz|kHz|MHz|GHz|"
    r"KB|MB|GB|TB|ms|s|min|h|px|pt|€|£|\$"
)
_TYPOGRAPHY_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("ellipses", re.compile(r"\.\.\."), "…"),
    ("dashes", re.compile(r"(?<=\S) ?---? ?(?=\S|$)"), "—"),
    ("dashes", re.compile(r"(?<=\w) - (?=\w)"), "SPACED_DASH"),
    ("symbols", re.compile(r"\((?:c|C)\)"), "©"),
    ("symbols", re.compile(r"\((?:r|R)\)"), "®"),
    ("symbols", re.compile(r"\((?:tm|TM)\)"), "™"),
    ("symbols", re.compile(r"(?<=\d) ?x ?(?=\d)"), "×"),
    ("symbols", re.compile(r"(?<=\d)'(?![sS]\b)"), "′"),
    ("symbols", re.compile(r"(?<=\d)\"(?=\s|$|[.,;:)])"), "″"),
    (
        "apostrophes",
        re.compile(r"(?<=\w)'(?=\w)|(?<!\w)'(?=\d\ds?\b)|(?<=s)'(?=\s|$|[.,;:!?])"),
        "’",
    ),
    ("spaces", re.compile(rf"(?<=\d) (?=(?:{_UNITS})(?![\w]))"), "\u00a0"),
    (
        "spaces",
        re.compile(r"(?:(?<=\bNo\.)|(?<=\bp\.)|(?<=\bpp\.)|(?<=\bFig\.)|(?<=§)) (?=\d)"),
        "\u00a0",
    ),
)
_FRENCH_SPACE_RE = re.compile(r"(?<=[^\s\u00a0]) ?([;:!?])(?=\s|$)")


def _curly_quotes(segment: str, before: str, marks: tuple[str, str, str, str]) -> tuple[str, int]:
    out = []
    count = 0
    previous = before
    for char in segment:
        if char in "\"'":
            opening = previous == "" or previous in _OPENING_CONTEXT
            if char == '"':
                char = marks[0] if opening else marks[1]
            else:
                char = marks[2] if opening else marks[3]
            count += 1
        out.append(char)
        previous = char
    return "".join(out), count


def _typography(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    locale = inputs["locale"]
    dash = "—" if inputs["dash_style"] == "em" else " – "
    changes = Counter[str]()
    pieces = []
    last = 0
    for protected in [*_PROTECTED_RE.finditer(text), None]:
        end = protected.start() if protected else len(text)
        segment = text[last:end]
        for kind, pattern, replacement in _TYPOGRAPHY_RULES:
            if kind == "spaces" and not inputs["non_breaking_spaces"]:
                continue
            value = dash if replacement == "SPACED_DASH" else replacement
            segment, done = pattern.subn(value, segment)
            changes[kind] += done
        segment, done = _curly_quotes(segment, text[last - 1 : last], QUOTE_STYLES[locale])
        changes["quotes"] += done
        if locale == "fr" and inputs["non_breaking_spaces"]:
            segment, done = _FRENCH_SPACE_RE.subn("\u00a0\\1", segment)
            changes["spaces"] += done
        pieces.append(segment)
        if protected:
            pieces.append(protected.group())
            last = protected.end()
    kinds = ("quotes", "apostrophes", "dashes", "ellipses", "symbols", "spaces")
    return {"text": "".join(pieces), "changes": {kind: changes[kind] for kind in kinds}}
