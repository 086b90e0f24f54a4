"""SEO helpers: keywords, SERP title and description checks, slugs, density, headings."""

from __future__ import annotations

import html.parser
import re
import unicodedata
from collections import Counter
from typing import Any

from engines import _text
from engines.base import Engine, EngineError

# --- keyword extraction ------------------------------------------------------------------


class KeywordsEngine(Engine):
    name = "seo.keywords"
    requires = ("yake",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        import yake

        # An extractor keeps per-document caches, so one per call (construction is ~1 ms).
        extractor = yake.KeywordExtractor(
            lan=inputs["language"],
            n=inputs["max_ngram"],
            top=inputs["max_keywords"],
            dedup_lim=0.9,
        )
        found = extractor.extract_keywords(inputs["text"])
        return {
            "keywords": [
                {"keyword": keyword, "score": round(float(score), 6)} for keyword, score in found
            ]
        }


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


# --- URL slug ----------------------------------------------------------------------------

# Letters NFKD does not decompose into ASCII.
_TRANSLITERATIONS = str.maketrans(
    {"ß": "ss", "æ": "ae", "Æ": "AE", "ø": "o", "Ø": "O", "œ": "oe", "Œ": "OE", "đ": "d",
     "Đ": "D", "ł": "l", "Ł": "L", "þ": "th", "Þ": "TH", "ð": "d", "Ð": "D", "ı": "i"}
)  # fmt: skip
# Short function words that add length to a URL and nothing to its meaning.
_SLUG_STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "how", "in", "into",
    "is", "it", "of", "on", "or", "so", "than", "that", "the", "then", "this", "to", "was",
    "what", "when", "where", "which", "who", "why", "will", "with", "your", "you",
})  # fmt: skip


class SlugEngine(Engine):
    name = "seo.slug"

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        text = inputs["text"].translate(_TRANSLITERATIONS).replace("&", " and ")
        ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
        tokens = re.findall(r"[a-z0-9]+", ascii_text.lower().replace("'", ""))
        if not tokens:
            raise EngineError("The text has no letters or digits that can go in a URL slug.")
        removed: list[str] = []
        if inputs["remove_stop_words"]:
            kept = [t for t in tokens if t not in _SLUG_STOP_WORDS]
            if kept:
                removed = [t for t in tokens if t in _SLUG_STOP_WORDS]
                tokens = kept
        separator = inputs["separator"]
        slug = ""
        for token in tokens:
            candidate = f"{slug}{separator}{token}" if slug else token
            if len(candidate) > inputs["max_length"]:
                break
            slug = candidate
        if not slug:  # a first word longer than the limit: cut it
            slug = tokens[0][: inputs["max_length"]]
        return {"slug": slug, "length": len(slug), "removed_words": removed}


# --- keyword density ---------------------------------------------------------------------

# Phrases never span a sentence or clause boundary.
_CLAUSE_SPLIT_RE = re.compile(r"[.!?;:()\[\]{}\"“”…\n]+")


class DensityEngine(Engine):
    name = "seo.density"

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        size = inputs["ngram"]
        stops = _text.stop_words(inputs["language"]) if inputs["exclude_stop_words"] else set()
        total = 0
        counts: Counter[str] = Counter()
        for clause in _CLAUSE_SPLIT_RE.split(inputs["text"].lower()):
            clause_words = [w.replace("’", "'") for w in _text.words(clause)]
            total += len(clause_words)
            for i in range(len(clause_words) - size + 1):
                gram = clause_words[i : i + size]
                if gram[0] in stops or gram[-1] in stops:
                    continue
                if all(w[0].isdigit() for w in gram):
                    continue
                counts[" ".join(gram)] += 1
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return {
            "total_words": total,
            "unique_phrases": len(counts),
            "phrases": [
                {
                    "phrase": phrase,
                    "count": count,
                    "density": round(count * size / total * 100, 2),
                }
                for phrase, count in ranked[: inputs["top"]]
            ],
        }


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


ENGINES = (
    KeywordsEngine(),
    SerpSnippetEngine(),
    SlugEngine(),
    DensityEngine(),
    HeadingsEngine(),
)
