"""``seo.serp_snippet``: SERP title and meta description checks, and Arial pixel widths."""

from __future__ import annotations

import unicodedata
from typing import Any

from engines.base import Engine

# --- SERP title and meta description -----------------------------------------------------

# Advance widths of Arial (the font of Google's result titles and snippets) in 1/1000 em.
_ARIAL_WIDTHS = {
    " ": 278, "!": 278, '"': 355, "#": 556, "$": 556, "%": 889, "&": 667, "'": 191,
    "(": 333, ")": 333, "*": 389, "+": 584, ",": 278, "-": 333, ".": 278, "/": 278,
    ":": 278, ";": 278, "<": 584, "=": 584, ">": 584, "?": 556, "@": 1015, "[": 278,
    "\\": 278, "]": 278, "^": 469, "_": 556, "`": 333, "{": 334, "|": 260, "}": 334,
    "~": 584, "A": 667, "B": 667, "C": 722, "D": 722, "E": 667, "F": 611, "G": 778,
    "H": 722, "I": 278, "J": 500, "K": 667, "L": 556, "M": 833, "N": 722, "O": 778,
    "P": 667, "Q": 778, "R": 722, "S": 667, "T": 611, "U": 722, "V": 667, "W": 944,
    "X": 667, "Y": 667, "Z": 611, "a": 556, "b": 556, "c": 500, "d": 556, "e": 556,
    "f": 278, "g": 556, "h": 556, "i": 222, "j": 222, "k": 500, "l": 222, "m": 833,
    "n": 556, "o": 556, "p": 556, "q": 556, "r": 333, "s": 500, "t": 278, "u": 556,
    "v": 500, "w": 722, "x": 500, "y": 500, "z": 500, "–": 556, "—": 1000, "…": 1000,
    "’": 222, "‘": 222, "“": 333, "”": 333, "•": 350, "·": 278,
}  # fmt: skip
_DEFAULT_WIDTH = 556  # digits and most letters
_ELLIPSIS = " ..."


def _char_width(char: str) -> int:
    width = _ARIAL_WIDTHS.get(char)
    if width is not None:
        return width
    if unicodedata.east_asian_width(char) in ("W", "F"):
        return 1000
    base = unicodedata.normalize("NFD", char)[0]
    return _ARIAL_WIDTHS.get(base, _DEFAULT_WIDTH)


def pixel_width(text: str, font_px: int) -> int:
    return round(sum(_char_width(c) for c in text) * font_px / 1000)


def _truncate_to_pixels(text: str, font_px: int, max_px: int) -> str:
    if pixel_width(text, font_px) <= max_px:
        return text
    budget = max_px - pixel_width(_ELLIPSIS, font_px)
    cut = ""
    for word in text.split(" "):
        candidate = f"{cut} {word}" if cut else word
        if pixel_width(candidate, font_px) > budget:
            break
        cut = candidate
    return cut.rstrip(" ,;:-–—") + _ELLIPSIS


class SerpSnippetEngine(Engine):
    """Checks a page title or meta description against how Google displays them."""

    name = "seo.serp_snippet"
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["field", "label", "min_chars", "max_chars", "font_px", "max_px"],
        "properties": {
            "field": {"type": "string"},
            "label": {"type": "string"},
            "min_chars": {"type": "integer", "minimum": 1},
            "max_chars": {"type": "integer", "minimum": 1},
            "font_px": {"type": "integer", "minimum": 1},
            "max_px": {"type": "integer", "minimum": 1},
        },
    }

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        text = " ".join(inputs[params["field"]].split())
        label = params["label"]
        keyword = " ".join(inputs["keyword"].split())
        length = len(text)
        width = pixel_width(text, params["font_px"])
        issues = []
        if length < params["min_chars"]:
            issues.append(
                f"{label} is {length} characters; aim for "
                f"{params['min_chars']}-{params['max_chars']}."
            )
        elif length > params["max_chars"]:
            issues.append(
                f"{label} is {length} characters; keep it to {params['max_chars']} or fewer."
            )
        if width > params["max_px"]:
            issues.append(
                f"{label} is about {width} px wide; Google truncates it after about "
                f"{params['max_px']} px."
            )
        keyword_found = None
        keyword_position = None
        if keyword:
            position = text.lower().find(keyword.lower())
            keyword_found = position >= 0
            keyword_position = position if keyword_found else None
            if not keyword_found:
                issues.append(f'{label} does not contain the keyword "{keyword}".')
        letters = [c for c in text if c.isalpha()]
        if len(letters) > 3 and all(c.isupper() for c in letters):
            issues.append(f"{label} is all in capitals; searchers read that as shouting.")
        return {
            "characters": length,
            "pixel_width": width,
            "max_pixel_width": params["max_px"],
            "recommended_characters": {"min": params["min_chars"], "max": params["max_chars"]},
            "keyword_found": keyword_found,
            "keyword_position": keyword_position,
            "preview": _truncate_to_pixels(text, params["font_px"], params["max_px"]),
            "ok": not issues,
            "issues": issues,
        }
