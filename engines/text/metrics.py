"""``text.metrics``: lexical diversity, sentence lengths, Markdown structure, platform limits."""

from __future__ import annotations

import html
import html.parser
import math
import re
import statistics
import unicodedata
from collections import Counter
from collections.abc import Callable
from typing import Any

from engines import _text
from engines.base import ChoiceEngine, EngineError
from engines.text._helpers import _normal_word, _per_100, _require_words, _round, _sentence_spans

# --- text.metrics: lexical diversity -----------------------------------------------------


def _mtld_pass(tokens: list[str], threshold: float) -> float | None:
    factors = 0.0
    types: set[str] = set()
    count = 0
    for token in tokens:
        count += 1
        types.add(token)
        if len(types) / count <= threshold:
            factors += 1
            types, count = set(), 0
    if count:
        factors += (1 - len(types) / count) / (1 - threshold)
    return len(tokens) / factors if factors else None


def _mtld(tokens: list[str], threshold: float) -> float | None:
    forward = _mtld_pass(tokens, threshold)
    backward = _mtld_pass(tokens[::-1], threshold)
    if forward is None or backward is None:
        return None
    return _round((forward + backward) / 2)


def _mattr(tokens: list[str], window: int) -> float | None:
    if len(tokens) < window:
        return None
    counts = Counter(tokens[:window])
    total = len(counts)
    for i in range(window, len(tokens)):
        leaving, entering = tokens[i - window], tokens[i]
        counts[leaving] -= 1
        if not counts[leaving]:
            del counts[leaving]
        counts[entering] += 1
        total += len(counts)
    return _round(total / (len(tokens) - window + 1) / window, 4)


_HDD_SAMPLE = 42


def _hdd(tokens: list[str]) -> float | None:
    """HD-D: the mean chance of meeting each word type in a random sample of 42 tokens."""
    size = len(tokens)
    if size < _HDD_SAMPLE:
        return None
    total = 0.0
    for frequency in Counter(tokens).values():
        # Probability that a sample of 42 draws none of this type (hypergeometric).
        none = 1.0
        for i in range(_HDD_SAMPLE):
            none *= (size - frequency - i) / (size - i)
            if none <= 0:
                none = 0.0
                break
        total += (1 - none) / _HDD_SAMPLE
    return _round(total, 4)


def _lexical_diversity(inputs: dict[str, Any]) -> dict[str, Any]:
    tokens = [_normal_word(w) for w in _require_words(inputs["text"])]
    size = len(tokens)
    counts = Counter(tokens)
    types = len(counts)
    hapax = sum(1 for c in counts.values() if c == 1)
    return {
        "tokens": size,
        "types": types,
        "ttr": _round(types / size, 4),
        "root_ttr": _round(types / math.sqrt(size), 4),
        "log_ttr": _round(math.log(types) / math.log(size), 4) if size > 1 else None,
        "mattr": _mattr(tokens, inputs["mattr_window"]),
        "mtld": _mtld(tokens, inputs["mtld_threshold"]),
        "hdd": _hdd(tokens),
        "hapax_legomena": hapax,
        "hapax_percent": _per_100(hapax, types),
    }


# --- text.metrics: sentence lengths ------------------------------------------------------

_LENGTH_BANDS = ((1, 9), (10, 19), (20, 29), (30, 39), (40, None))


def _sentence_lengths(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    spans = _sentence_spans(text)
    if not spans:
        raise EngineError("The text has no sentences to measure.")
    sentences = [" ".join(text[start:end].split()) for start, end in spans]
    lengths = [len(_text.words(s)) for s in sentences]
    threshold = inputs["long_threshold"]
    long = [
        {"index": i, "words": n, "text": s}
        for i, (s, n) in enumerate(zip(sentences, lengths, strict=True))
        if n > threshold
    ]
    return {
        "sentences": len(lengths),
        "words": sum(lengths),
        "average_words": _round(statistics.fmean(lengths)),
        "median_words": _round(statistics.median(lengths)),
        "standard_deviation": _round(statistics.pstdev(lengths)),
        "shortest_words": min(lengths),
        "longest_words": max(lengths),
        "distribution": [
            {
                "range": f"{low}-{high}" if high else f"{low}+",
                "sentences": sum(1 for n in lengths if n >= low and (high is None or n <= high)),
            }
            for low, high in _LENGTH_BANDS
        ],
        "long_sentences_percent": _per_100(len(long), len(lengths)),
        "long_sentences": long[: inputs["max_listed"]],
    }


# --- text.metrics: Markdown structure ----------------------------------------------------


class _MarkdownCounter(html.parser.HTMLParser):
    """Walks the HTML that Markdown renders to and counts its parts, section by section."""

    _COUNTED = {
        "p": "paragraphs", "ul": "lists", "ol": "lists", "li": "list_items", "pre": "code_blocks",
        "img": "images", "a": "links", "table": "tables", "blockquote": "blockquotes",
    }  # fmt: skip

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.counts = Counter[str]()
        self.sections: list[dict[str, Any]] = []
        self.paragraph_words: list[int] = []
        self.code_lines = 0
        self._heading: list[str] | None = None
        self._paragraph: list[str] | None = None
        self._in_code = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._COUNTED:
            self.counts[self._COUNTED[tag]] += 1
        if re.fullmatch(r"h[1-6]", tag):
            self._heading = []
            self.sections.append({"heading": "", "level": int(tag[1]), "words": 0})
        elif tag == "p":
            self._paragraph = []
        elif tag == "pre":
            self._in_code += 1

    def handle_endtag(self, tag: str) -> None:
        if re.fullmatch(r"h[1-6]", tag) and self._heading is not None:
            self.sections[-1]["heading"] = " ".join("".join(self._heading).split())
            self._heading = None
        elif tag == "p" and self._paragraph is not None:
            self.paragraph_words.append(len(_text.words("".join(self._paragraph))))
            self._paragraph = None
        elif tag == "pre":
            self._in_code -= 1

    def handle_data(self, data: str) -> None:
        if self._in_code:
            self.code_lines += len(data.strip("\n").splitlines())
            return
        if self._heading is not None:
            self._heading.append(data)
            return
        if self._paragraph is not None:
            self._paragraph.append(data)
        found = len(_text.words(data))
        self.counts["words"] += found
        if self.sections:
            self.sections[-1]["words"] += found


def _image_seconds(images: int) -> int:
    # Medium's rule: 12 s for the first image, one second less for each next, 3 s from the tenth.
    return sum(max(12 - i, 3) for i in range(images))


def _markdown_structure(inputs: dict[str, Any]) -> dict[str, Any]:
    import markdown

    rendered = markdown.markdown(inputs["text"], extensions=["tables", "fenced_code"])
    counter = _MarkdownCounter()
    counter.feed(rendered)
    counter.close()
    counts = counter.counts
    words = counts["words"]
    if not words and not counter.sections:
        raise EngineError("The Markdown has no text to measure.")
    heading_words = sum(len(_text.words(s["heading"])) for s in counter.sections)
    total_words = words + heading_words
    seconds = math.ceil(total_words * 60 / inputs["words_per_minute"])
    seconds += _image_seconds(counts["images"])
    paragraphs = counter.paragraph_words
    issues = [
        f'The section "{s["heading"]}" runs {s["words"]} words without a subheading.'
        for s in counter.sections
        if s["words"] > inputs["max_section_words"]
    ]
    long_paragraphs = sum(1 for n in paragraphs if n > inputs["max_paragraph_words"])
    if long_paragraphs:
        issues.append(
            f"{long_paragraphs} paragraph(s) run over {inputs['max_paragraph_words']} words; "
            "split them for easier reading on screens."
        )
    if not counter.sections:
        issues.append("The document has no headings; readers scan by headings.")
    return {
        "words": total_words,
        "headings": len(counter.sections),
        "paragraphs": counts["paragraphs"],
        "lists": counts["lists"],
        "list_items": counts["list_items"],
        "code_blocks": counts["code_blocks"],
        "code_lines": counter.code_lines,
        "images": counts["images"],
        "links": counts["links"],
        "tables": counts["tables"],
        "blockquotes": counts["blockquotes"],
        "average_paragraph_words": _round(statistics.fmean(paragraphs)) if paragraphs else 0,
        "longest_paragraph_words": max(paragraphs, default=0),
        "reading_time_seconds": max(seconds, 1),
        "reading_time": _text.duration_text(max(seconds, 1)),
        "sections": counter.sections,
        "issues": issues,
    }


# --- text.metrics: platform character limits ---------------------------------------------

# name, limit, how the platform counts
PLATFORMS = {
    "x_post": ("X (Twitter) post", 280, "x"),
    "threads_post": ("Threads post", 500, "characters"),
    "bluesky_post": ("Bluesky post", 300, "graphemes"),
    "mastodon_post": ("Mastodon post", 500, "mastodon"),
    "linkedin_post": ("LinkedIn post", 3000, "characters"),
    "linkedin_headline": ("LinkedIn headline", 220, "characters"),
    "instagram_caption": ("Instagram caption", 2200, "characters"),
    "facebook_post": ("Facebook post", 63206, "characters"),
    "tiktok_caption": ("TikTok caption", 4000, "characters"),
    "youtube_title": ("YouTube title", 100, "characters"),
    "youtube_description": ("YouTube description", 5000, "characters"),
    "pinterest_description": ("Pinterest pin description", 500, "characters"),
    "google_business_post": ("Google Business Profile post", 1500, "characters"),
    "meta_title": ("SEO title tag", 60, "characters"),
    "meta_description": ("SEO meta description", 160, "characters"),
    "sms": ("SMS (one segment)", 160, "sms"),
}
_URL_IN_POST_RE = re.compile(r"https?://\S+|www\.\S+")
_X_URL_WEIGHT = 23
# Code point ranges X counts as one; everything else (CJK, emoji) counts as two.
_X_LIGHT_RANGES = ((0, 4351), (8192, 8205), (8208, 8223), (8242, 8247))
_GSM_BASIC = frozenset(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    "ÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
)
_GSM_EXTENDED = frozenset("^{}\\[~]|€\f")


def _graphemes(text: str) -> list[str]:
    """User-perceived characters, approximately: marks, joiners and modifiers stay attached."""
    clusters: list[str] = []
    join_next = False
    for char in text:
        code = ord(char)
        attaches = (
            unicodedata.combining(char)
            or 0xFE00 <= code <= 0xFE0F
            or 0x1F3FB <= code <= 0x1F3FF
            or 0xE0020 <= code <= 0xE007F
            or code == 0x20E3
            or code == 0x200D
        )
        is_second_flag_half = (
            0x1F1E6 <= code <= 0x1F1FF
            and clusters
            and len(clusters[-1]) == 1
            and 0x1F1E6 <= ord(clusters[-1]) <= 0x1F1FF
        )
        if clusters and (attaches or join_next or is_second_flag_half):
            clusters[-1] += char
        else:
            clusters.append(char)
        join_next = code == 0x200D
    return clusters


def _x_weight(cluster: str) -> int:
    if len(cluster) > 1 and any(ord(c) > 0x2000 for c in cluster):
        return 2  # an emoji sequence counts as one emoji
    code = ord(cluster[0])
    light = any(low <= code <= high for low, high in _X_LIGHT_RANGES)
    return (1 if light else 2) + sum(1 if ord(c) <= 4351 else 2 for c in cluster[1:])


def _with_urls_as(text: str, weigh: Callable[[str], int]) -> int:
    urls = _URL_IN_POST_RE.findall(text)
    rest = _URL_IN_POST_RE.sub("", text)
    return len(urls) * _X_URL_WEIGHT + weigh(rest)


def _sms(text: str) -> tuple[str, int, int]:
    """Encoding, segment limit and segments of an SMS."""
    if all(c in _GSM_BASIC or c in _GSM_EXTENDED for c in text):
        units = len(text) + sum(1 for c in text if c in _GSM_EXTENDED)
        single, multi, encoding = 160, 153, "GSM-7"
    else:
        units = len(text.encode("utf-16-le")) // 2
        single, multi, encoding = 70, 67, "UCS-2"
    segments = 1 if units <= single else math.ceil(units / multi)
    return encoding, single, max(segments, 1) if units else 0


def _platform_limits(inputs: dict[str, Any]) -> dict[str, Any]:
    text = unicodedata.normalize("NFC", inputs["text"])
    graphemes = _graphemes(text)
    encoding, sms_single, segments = _sms(text)
    sms_units = len(text) + sum(1 for c in text if c in _GSM_EXTENDED)
    if encoding == "UCS-2":
        sms_units = len(text.encode("utf-16-le")) // 2
    counts = {
        "characters": len(text),
        "graphemes": len(graphemes),
        "x": _with_urls_as(text, lambda rest: sum(_x_weight(c) for c in _graphemes(rest))),
        "mastodon": _with_urls_as(text, len),
        "sms": sms_units,
    }
    results = []
    for platform in inputs["platforms"]:
        name, limit, counting = PLATFORMS[platform]
        if counting == "sms":
            limit = sms_single
        count = counts[counting]
        results.append(
            {
                "platform": platform,
                "name": name,
                "limit": limit,
                "count": count,
                "remaining": limit - count,
                "fits": count <= limit,
            }
        )
    return {
        "characters": len(text),
        "graphemes": len(graphemes),
        "words": len(_text.words(text)),
        "results": results,
        "sms_encoding": encoding,
        "sms_segments": segments,
    }


class MetricsEngine(ChoiceEngine):
    name = "text.metrics"
    requires = ("pysbd", "markdown")
    choice = "metric"
    jobs = {
        "lexical_diversity": _lexical_diversity,
        "sentence_lengths": _sentence_lengths,
        "markdown": _markdown_structure,
        "limits": _platform_limits,
    }
