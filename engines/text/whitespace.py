"""Whitespace cleaning and line sorting, jobs of ``text.transform``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# Zero-width characters, the byte-order mark and soft hyphens: invisible, and they break
# search, counting and copy-paste.
_INVISIBLE_RE = re.compile("[\u200b\u2060\ufeff\u00ad\u180e]")
_ODD_SPACES_RE = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")


def _whitespace(inputs: dict[str, Any]) -> dict[str, Any]:
    original = inputs["text"]
    text = original.replace("\r\n", "\n").replace("\r", "\n")
    invisible = 0
    if inputs["remove_invisible"]:
        text, invisible = _INVISIBLE_RE.subn("", text)
        text = _ODD_SPACES_RE.sub(" ", text)
    lines = text.split("\n")
    if inputs["collapse_spaces"]:
        lines = [re.sub(r"(?<=\S)[ \t]{2,}", " ", line) for line in lines]
    trim = inputs["trim"]
    if trim == "both":
        lines = [line.strip(" \t") for line in lines]
    elif trim == "trailing":
        lines = [line.rstrip(" \t") for line in lines]
    blank = inputs["blank_lines"]
    if blank == "remove":
        lines = [line for line in lines if line.strip()]
    elif blank == "collapse":
        lines = [
            line for i, line in enumerate(lines) if line.strip() or (i > 0 and lines[i - 1].strip())
        ]
    text = "\n".join(lines).strip("\n")
    return {
        "text": text,
        "characters_removed": len(original) - len(text),
        "lines_before": len(original.splitlines()),
        "lines_after": len(text.splitlines()),
        "invisible_removed": invisible,
    }


def _natural_key(line: str) -> list[tuple[int, Any]]:
    return [(0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", line)]


def _lines(inputs: dict[str, Any]) -> dict[str, Any]:
    lines = inputs["text"].replace("\r\n", "\n").split("\n")
    if inputs["trim"]:
        lines = [line.strip() for line in lines]
    empty = 0
    if inputs["remove_empty"]:
        kept = [line for line in lines if line.strip()]
        empty, lines = len(lines) - len(kept), kept
    fold: Callable[[str], str] = (lambda s: s) if inputs["case_sensitive"] else str.casefold
    duplicates = 0
    if inputs["remove_duplicates"]:
        unique = list({fold(line): line for line in reversed(lines)}.values())[::-1]
        duplicates, lines = len(lines) - len(unique), unique
    sort = inputs["sort"]
    keys: dict[str, Callable[[str], Any]] = {
        "alphabetical": fold,
        "natural": lambda s: _natural_key(fold(s)),
        "length": lambda s: (len(s), fold(s)),
    }
    if sort in keys:
        lines.sort(key=keys[sort], reverse=inputs["descending"])
    elif sort == "reverse":
        lines.reverse()
    return {
        "text": "\n".join(lines),
        "lines": len(lines),
        "duplicates_removed": duplicates,
        "empty_removed": empty,
    }
