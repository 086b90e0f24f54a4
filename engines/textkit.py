"""Local text utilities for writing and SEO: counts, finders, cleaners, extractors, case rules.

Six engine families, each choosing its operation from the tool's ``params``:

- ``text.frequency``: word frequencies and n-grams;
- ``text.metrics``: lexical diversity, sentence lengths, Markdown structure, platform limits;
- ``text.find``: style finders (passive voice, adverbs, fillers, clichés, redundancies,
  inclusive language, profanity) that answer matches with character offsets;
- ``text.extract``: e-mail addresses, URLs, phone numbers, hashtags, dates and acronyms;
- ``text.transform``: spelling, case, typography, whitespace, line sorting, HTML to text and
  numbers to words;
- ``text.compare``: similarity of two texts and duplicate sentences.

Everything here is deterministic and offline; the word lists live in ``engines._textkit_lists``.
"""

from __future__ import annotations

import datetime
import html
import html.parser
import math
import re
import statistics
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from engines import _text
from engines import _textkit_lists as lists
from engines.base import ChoiceEngine, Engine, EngineError, load_once

Match = dict[str, Any]


# --- shared helpers ----------------------------------------------------------------------


def _round(value: float, digits: int = 2) -> float:
    return round(float(value), digits)


def _per_100(count: int, total: int) -> float:
    return _round(count * 100 / total) if total else 0.0


def _require_words(text: str) -> list[str]:
    found = _text.words(text)
    if not found:
        raise EngineError("The text has no words to analyse.")
    return found


def _normal_word(word: str) -> str:
    return word.replace("’", "'").lower()


def _phrase_regex(phrases: Iterable[str]) -> re.Pattern[str]:
    """One case-insensitive pattern for whole phrases: longest first, flexible spacing."""

    def piece(phrase: str) -> str:
        escaped = re.escape(phrase.lower())
        return escaped.replace(r"\ ", r"\s+").replace("'", "['’]")

    alternatives = "|".join(piece(p) for p in sorted(set(phrases), key=len, reverse=True))
    return re.compile(rf"(?<![\w'’-])(?:{alternatives})(?![\w'’-])", re.IGNORECASE)


def _match(found: re.Match[str], **extra: Any) -> Match:
    return {"text": found.group(), "start": found.start(), "end": found.end(), **extra}


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentences as (start, end) offsets into ``text``, trailing whitespace excluded."""
    import pysbd

    segmenter = pysbd.Segmenter(language="en", clean=False, char_span=True)
    spans = []
    for span in segmenter.segment(text):
        sentence = text[span.start : span.end]
        if _text.WORD_RE.search(sentence):
            stripped = sentence.rstrip()
            start = span.start + len(sentence) - len(sentence.lstrip())
            spans.append((start, span.start + len(stripped)))
    return spans


def _ranked(counts: Counter[str], top: int | None = None) -> list[tuple[str, int]]:
    """Most frequent first; ties in alphabetical order."""
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top]


# --- text.frequency ----------------------------------------------------------------------

_CLAUSE_SPLIT_RE = re.compile(r"[.!?;:()\[\]{}\"“”…\n]+")


def _word_frequency(inputs: dict[str, Any]) -> dict[str, Any]:
    found = _require_words(inputs["text"])
    if not inputs["case_sensitive"]:
        found = [_normal_word(w) for w in found]
    stops = _text.stop_words(inputs["language"]) if inputs["exclude_stop_words"] else set()
    counted = Counter(
        w for w in found if len(w) >= inputs["min_length"] and _normal_word(w) not in stops
    )
    total = len(found)
    listed = []
    covered = 0
    for word, count in _ranked(counted, inputs["top"]):
        covered += count
        listed.append(
            {
                "word": word,
                "count": count,
                "percent": _per_100(count, total),
                "cumulative_percent": _per_100(covered, total),
            }
        )
    return {
        "total_words": total,
        "unique_words": len(set(found)),
        "hapax_legomena": sum(1 for c in Counter(found).values() if c == 1),
        "words": listed,
    }


def _ngrams(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"] if inputs["case_sensitive"] else inputs["text"].lower()
    size = inputs["n"]
    counts: Counter[str] = Counter()
    if inputs["unit"] == "character":
        flat = " ".join(text.split())
        counts.update(flat[i : i + size] for i in range(len(flat) - size + 1))
    else:
        spans = [text] if inputs["cross_punctuation"] else _CLAUSE_SPLIT_RE.split(text)
        for span in spans:
            tokens = [w.replace("’", "'") for w in _text.words(span)]
            counts.update(" ".join(tokens[i : i + size]) for i in range(len(tokens) - size + 1))
    total = sum(counts.values())
    if not total:
        raise EngineError(f"The text is too short for {size}-{inputs['unit']} n-grams.")
    kept = Counter({gram: c for gram, c in counts.items() if c >= inputs["min_count"]})
    return {
        "unit": inputs["unit"],
        "n": size,
        "total_ngrams": total,
        "unique_ngrams": len(counts),
        "ngrams": [
            {"ngram": gram, "count": count, "percent": _per_100(count, total)}
            for gram, count in _ranked(kept, inputs["top"])
        ],
    }


class FrequencyEngine(ChoiceEngine):
    name = "text.frequency"
    requires = ("sumy",)
    choice = "unit"
    jobs = {"words": _word_frequency, "ngrams": _ngrams}


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


# --- text.find ---------------------------------------------------------------------------

_BE_FORMS = (
    r"am|is|are|was|were|be|been|being|isn['’]t|aren['’]t|wasn['’]t|weren['’]t|"
    r"get|gets|got|gotten|getting|'s|'re|’s|’re"
)
_PASSIVE_RE = re.compile(
    rf"\b(?:{_BE_FORMS})"
    r"(?:\s+(?:not|never|also|already|just|often|always|still|\w+ly))*"
    rf"\s+(?!(?:{'|'.join(lists.NOT_PARTICIPLES)})\b)"
    rf"(?P<participle>[a-z]{{2,}}ed|{'|'.join(lists.IRREGULAR_PARTICIPLES)})\b"
    r"(?P<agent>\s+by\b)?",
    re.IGNORECASE,
)
_LY_RE = re.compile(r"(?<![\w'’-])[A-Za-z]{2,}ly(?![\w'’-])")
_SENTENCE_START_RE = re.compile(r"(?:^|[.!?…][\"'”’)\]]*\s+|\n\s*)$")


def _passive(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    spans = _sentence_spans(text)
    if not spans:
        raise EngineError("The text has no sentences to check.")
    matches = [
        _match(found, with_agent=bool(found.group("agent"))) for found in _PASSIVE_RE.finditer(text)
    ]
    for match in matches:
        if match["with_agent"]:
            match["end"] -= len(" by")
            match["text"] = text[match["start"] : match["end"]]
    passive = {i for i, (s, e) in enumerate(spans) for m in matches if s <= m["start"] < e}
    return {
        "sentences": len(spans),
        "passive_sentences": len(passive),
        "passive_percent": _per_100(len(passive), len(spans)),
        "matches": matches,
    }


def _adverbs(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    total = len(_require_words(text))
    matches = []
    for found in _LY_RE.finditer(text):
        word = found.group()
        if word.lower() in lists.NOT_ADVERBS:
            continue
        at_start = _SENTENCE_START_RE.search(text, 0, found.start()) is not None
        if word[0].isupper() and not at_start:
            continue  # a name such as Kelly or Beverly
        matches.append(_match(found))
    counts = Counter(m["text"].lower() for m in matches)
    return {
        "words": total,
        "adverbs": len(matches),
        "per_100_words": _per_100(len(matches), total),
        "most_frequent": [{"word": w, "count": c} for w, c in _ranked(counts, 10)],
        "matches": matches,
    }


@load_once
def _filler_regexes() -> dict[str, re.Pattern[str]]:
    return {category: _phrase_regex(words) for category, words in lists.FILLERS.items()}


def _fillers(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    total = len(_require_words(text))
    taken: list[tuple[int, int]] = []
    matches = []
    for category in inputs["categories"]:
        for found in _filler_regexes()[category].finditer(text):
            if any(s < found.end() and found.start() < e for s, e in taken):
                continue  # already counted under an earlier category
            taken.append(found.span())
            matches.append(_match(found, category=category, advice=lists.FILLER_ADVICE[category]))
    matches.sort(key=lambda m: m["start"])
    by_category = Counter(m["category"] for m in matches)
    return {
        "words": total,
        "count": len(matches),
        "per_100_words": _per_100(len(matches), total),
        "by_category": {c: by_category[c] for c in lists.FILLERS},
        "matches": matches,
    }


@load_once
def _cliche_regex() -> re.Pattern[str]:
    return _phrase_regex(lists.CLICHES)


def _cliches(inputs: dict[str, Any]) -> dict[str, Any]:
    matches = [_match(found) for found in _cliche_regex().finditer(inputs["text"])]
    return {"count": len(matches), "matches": matches}


@load_once
def _redundancy_lookup() -> tuple[re.Pattern[str], dict[str, str]]:
    lookup = {" ".join(k.lower().split()): v for k, v in lists.REDUNDANCIES.items()}
    return _phrase_regex(lookup), lookup


def _keep_case(original: str, replacement: str) -> str:
    if original[:1].isupper() and replacement[:1].islower():
        return replacement[0].upper() + replacement[1:]
    return replacement


def _redundancies(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    regex, lookup = _redundancy_lookup()
    matches = []
    pieces = []
    last = 0
    for found in regex.finditer(text):
        key = " ".join(_normal_word(found.group()).split())
        suggestion = _keep_case(found.group(), lookup[key])
        matches.append(_match(found, suggestion=suggestion))
        pieces += [text[last : found.start()], suggestion]
        last = found.end()
    pieces.append(text[last:])
    return {"count": len(matches), "matches": matches, "revised_text": "".join(pieces)}


@load_once
def _inclusive_lookup() -> tuple[re.Pattern[str], dict[str, tuple[str, tuple[str, ...], str]]]:
    lookup = {term: (category, tuple(s), why) for term, category, s, why in lists.INCLUSIVE_TERMS}
    return _phrase_regex(lookup), lookup


def _inclusive(inputs: dict[str, Any]) -> dict[str, Any]:
    regex, lookup = _inclusive_lookup()
    matches = []
    for found in regex.finditer(inputs["text"]):
        category, suggestions, reason = lookup[" ".join(_normal_word(found.group()).split())]
        if category not in inputs["categories"]:
            continue
        matches.append(
            _match(found, category=category, suggestions=list(suggestions), reason=reason)
        )
    by_category = Counter(m["category"] for m in matches)
    return {
        "count": len(matches),
        "by_category": dict(_ranked(by_category)),
        "matches": matches,
    }


@load_once
def _profanity_regex() -> re.Pattern[str]:
    return _phrase_regex(lists.PROFANITY)


def _mask(word: str, style: str) -> str:
    if style == "full":
        return re.sub(r"\w", "*", word)
    return word[0] + re.sub(r"\w", "*", word[1:])


def _profanity(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    matches = []
    pieces = []
    last = 0
    for found in _profanity_regex().finditer(text):
        severity = lists.PROFANITY[" ".join(found.group().lower().split())]
        if severity == "mild" and not inputs["include_mild"]:
            continue
        matches.append(_match(found, severity=severity))
        pieces += [text[last : found.start()], _mask(found.group(), inputs["mask_style"])]
        last = found.end()
    pieces.append(text[last:])
    return {
        "contains_profanity": bool(matches),
        "count": len(matches),
        "strong": sum(1 for m in matches if m["severity"] == "strong"),
        "mild": sum(1 for m in matches if m["severity"] == "mild"),
        "matches": matches,
        "masked_text": "".join(pieces),
    }


class FindEngine(ChoiceEngine):
    name = "text.find"
    requires = ("pysbd",)
    choice = "finder"
    jobs = {
        "passive": _passive,
        "adverbs": _adverbs,
        "fillers": _fillers,
        "cliches": _cliches,
        "redundancies": _redundancies,
        "inclusive": _inclusive,
        "profanity": _profanity,
    }


# --- text.extract ------------------------------------------------------------------------

_EMAIL_RE = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,62}[A-Za-z0-9_%+-])?"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-])"
)
# "jane [at] example [dot] com" and "jane(at)example(dot)com".
_OBFUSCATED_AT_RE = re.compile(r"\s*[\[({]\s*at\s*[\])}]\s*", re.IGNORECASE)
_OBFUSCATED_DOT_RE = re.compile(r"\s*[\[({]\s*dot\s*[\])}]\s*", re.IGNORECASE)
_URL_RE = re.compile(r"(?<![\w@/])(?:https?://|ftp://|www\.)[^\s<>\"'`]+", re.IGNORECASE)
_URL_TRAILING = ".,;:!?'\"”’…"
_CLOSERS = {")": "(", "]": "[", "}": "{"}


def _tally(items: list[tuple[str, str]]) -> tuple[list[Match], list[Match]]:
    """(item, domain) pairs -> items with counts in first-seen order, and domains by count."""
    counts = Counter(item for item, _ in items)
    domains = dict(items)
    listed = [
        {"value": item, "count": counts[item], "domain": domains[item]}
        for item in dict.fromkeys(item for item, _ in items)
    ]
    by_domain = Counter(domain for _, domain in items)
    return listed, [{"domain": d, "count": c} for d, c in _ranked(by_domain)]


def _emails(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    if inputs["deobfuscate"]:
        text = _OBFUSCATED_DOT_RE.sub(".", _OBFUSCATED_AT_RE.sub("@", text))
    found = []
    for match in _EMAIL_RE.finditer(text):
        local, domain = match.group().rsplit("@", 1)
        domain = domain.lower()
        email = f"{local.lower() if inputs['lowercase'] else local}@{domain}"
        found.append((email, domain))
    emails, domains = _tally(found)
    return {
        "count": len(emails),
        "emails": [
            {"email": e["value"], "count": e["count"], "domain": e["domain"]} for e in emails
        ],
        "domains": domains,
    }


def _trim_url(url: str) -> str:
    while url:
        last = url[-1]
        unbalanced = last in _CLOSERS and url.count(last) > url.count(_CLOSERS[last])
        if last not in _URL_TRAILING and not unbalanced:
            break
        url = url[:-1]
    return url


def _urls(inputs: dict[str, Any]) -> dict[str, Any]:
    from urllib.parse import urlsplit

    found = []
    for match in _URL_RE.finditer(inputs["text"]):
        url = _trim_url(match.group())
        full = url if "://" in url else f"http://{url}"
        try:
            host = (urlsplit(full).hostname or "").removeprefix("www.")
        except ValueError:
            continue
        if "." not in host:
            continue
        found.append((url, host))
    urls, domains = _tally(found)
    return {
        "count": len(urls),
        "urls": [{"url": u["value"], "count": u["count"], "domain": u["domain"]} for u in urls],
        "domains": domains,
    }


# Calling code and trunk prefix (dialled before national numbers) of the supported countries.
PHONE_COUNTRIES = {
    "US": ("1", "1"), "CA": ("1", "1"), "GB": ("44", "0"), "IE": ("353", "0"),
    "AU": ("61", "0"), "NZ": ("64", "0"), "DE": ("49", "0"), "FR": ("33", "0"),
    "ES": ("34", ""), "IT": ("39", ""), "NL": ("31", "0"), "BE": ("32", "0"),
    "CH": ("41", "0"), "AT": ("43", "0"), "SE": ("46", "0"), "PT": ("351", ""),
    "IN": ("91", "0"), "BR": ("55", "0"), "MX": ("52", ""), "JP": ("81", "0"),
    "SG": ("65", ""), "ZA": ("27", "0"),
}  # fmt: skip
_PHONE_RE = re.compile(r"(?<![\w+.,/-])(?:\+|\b|(?=\())\(?\d[\d().\t -]{5,22}\d(?![\w-]|[.,]\d)")
_DATE_LIKE_RE = re.compile(r"^\d{4}[-./]\d{1,2}[-./]\d{1,2}$|^\d{1,2}[-./]\d{1,2}[-./]\d{2,4}$")


def _e164(raw: str, digits: str, country: str) -> str | None:
    code, trunk = PHONE_COUNTRIES[country]
    if raw.startswith("+"):
        number = digits
    elif digits.startswith("00"):
        number = digits[2:]
    elif code == "1":
        if len(digits) == 10:
            number = "1" + digits
        elif len(digits) == 11 and digits.startswith("1"):
            number = digits
        else:
            return None
    elif trunk:
        if not digits.startswith(trunk):
            return None
        number = code + digits[len(trunk) :]
    else:
        number = code + digits
    return f"+{number}" if 8 <= len(number) <= 15 else None


def _phones(inputs: dict[str, Any]) -> dict[str, Any]:
    numbers = []
    for match in _PHONE_RE.finditer(inputs["text"]):
        raw = match.group().strip()
        digits = re.sub(r"\D", "", raw)
        has_separator = bool(re.search(r"[\s().-]", raw))
        if not 7 <= len(digits) <= 15 or _DATE_LIKE_RE.match(raw):
            continue
        if raw.count("(") != raw.count(")") or not (has_separator or raw.startswith("+")):
            continue  # a bare run of digits is more likely an order or account number
        numbers.append(
            {
                "number": raw,
                "e164": _e164(raw, digits, inputs["default_country"]),
                "start": match.start(),
                "end": match.start() + len(raw),
            }
        )
    return {"count": len(numbers), "numbers": numbers}


_HASHTAG_RE = re.compile(r"(?<![\w&#/])#(\w*[^\W\d_]\w*)")
_MENTION_RE = re.compile(r"(?<![\w@./])@([A-Za-z0-9_](?:[A-Za-z0-9_.]*[A-Za-z0-9_])?)(?![\w@])")
_CASHTAG_RE = re.compile(r"(?<![\w$])\$([A-Za-z]{1,6}(?:\.[A-Za-z]{1,2})?)(?![\w])")


def _grouped(values: list[str], key: Callable[[str], str]) -> list[Match]:
    """Count values by ``key``, keeping each group's first spelling; most frequent first."""
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for value in values:
        counts[key(value)] += 1
        first.setdefault(key(value), value)
    order = {k: i for i, k in enumerate(first)}
    ranked = sorted(counts, key=lambda k: (-counts[k], order[k]))
    return [{"value": first[k], "count": counts[k]} for k in ranked]


def _social_tags(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    hashtags = _grouped(["#" + m for m in _HASHTAG_RE.findall(text)], str.lower)
    mentions = _grouped(["@" + m for m in _MENTION_RE.findall(text)], str.lower)
    cashtags = _grouped(["$" + m.upper() for m in _CASHTAG_RE.findall(text)], str.upper)
    return {
        "hashtags": [{"tag": h["value"], "count": h["count"]} for h in hashtags],
        "mentions": [{"handle": m["value"], "count": m["count"]} for m in mentions],
        "cashtags": [{"symbol": c["value"], "count": c["count"]} for c in cashtags],
    }


_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sept", "sep"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}  # fmt: skip
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_DATE_RE = re.compile(
    rf"\b(?:"
    rf"(?P<iso>(?P<iy>\d{{4}})-(?P<im>\d{{1,2}})-(?P<id>\d{{1,2}}))"
    rf"|(?P<num>(?P<n1>\d{{1,2}})(?P<sep>[/.])(?P<n2>\d{{1,2}})(?P=sep)(?P<ny>\d{{4}}|\d{{2}}))"
    rf"|(?P<mdy>(?P<m1>{_MONTH})\s+(?P<d1>{_DAY}),?\s+(?P<y1>\d{{4}}))"
    rf"|(?P<dmy>(?P<d2>{_DAY})\s+(?:of\s+)?(?P<m2>{_MONTH}),?\s+(?P<y2>\d{{4}}))"
    rf"|(?P<my>(?P<m3>{_MONTH})\s+(?P<y3>\d{{4}}))"
    rf")(?![\w/-]|\.\d)",
    re.IGNORECASE,
)


def _year(text: str) -> int:
    year = int(text)
    if len(text) == 2:  # the POSIX pivot: 69 -> 2069, 70 -> 1970
        year += 2000 if year < 70 else 1900
    return year


def _date_parts(found: re.Match[str], day_first: bool) -> tuple[int, int, int | None]:
    group = found.group
    if group("iso"):
        return int(group("iy")), int(group("im")), int(group("id"))
    if group("num"):
        first, second = int(group("n1")), int(group("n2"))
        day, month = (first, second) if day_first else (second, first)
        return _year(group("ny")), month, day
    if group("mdy"):
        return int(group("y1")), _month(group("m1")), int(re.sub(r"\D", "", group("d1")))
    if group("dmy"):
        return int(group("y2")), _month(group("m2")), int(re.sub(r"\D", "", group("d2")))
    return int(group("y3")), _month(group("m3")), None


def _month(text: str) -> int:
    return _MONTHS[text.rstrip(".").lower()]


def _dates(inputs: dict[str, Any]) -> dict[str, Any]:
    dates = []
    for found in _DATE_RE.finditer(inputs["text"]):
        year, month, day = _date_parts(found, inputs["day_first"])
        try:
            value = datetime.date(year, month, day or 1)
        except ValueError:
            continue  # 31/02/2024 or 13/13/2024: not a date
        dates.append(
            {
                "text": found.group(),
                "start": found.start(),
                "end": found.end(),
                "date": value.isoformat() if day else value.isoformat()[:7],
                "precision": "day" if day else "month",
            }
        )
    ordered = sorted(d["date"] for d in dates)
    return {
        "count": len(dates),
        "earliest": ordered[0] if ordered else None,
        "latest": ordered[-1] if ordered else None,
        "dates": dates,
    }


_ACRONYM_RE = re.compile(r"\b([A-Z][A-Z0-9&]*[A-Z][A-Z0-9&]*)(s?)\b")
_PAREN_RE = re.compile(r"\(([^()]{1,120})\)")
_MINOR_WORDS = frozenset({"of", "and", "the", "for", "in", "on", "to", "a", "an", "&", "de"})


def _initials(words: list[str], camel: bool) -> str:
    """Initials of the major words; parts of "Wi-Fi" count, and with ``camel`` of "JavaScript"."""
    letters = []
    for word in words:
        if word.lower() in _MINOR_WORDS:
            continue
        for part in re.split(r"[-/]", word):
            pieces = re.findall(r"[A-Z]?[^A-Z]*", part) if camel else [part]
            letters.extend(piece[0] for piece in pieces if piece)
    return "".join(letters).upper()


def _spells(words: list[str], acronym: str) -> bool:
    target = acronym.replace("&", "")
    return _initials(words, camel=False) == target or _initials(words, camel=True) == target


def _expansion_before(text: str, paren_start: int, acronym: str) -> str | None:
    """The words right before "(ACRONYM)" whose initials spell it, if any."""
    before = re.findall(r"[\w’'&/-]+", text[max(0, paren_start - 200) : paren_start])
    for size in range(1, min(len(acronym) * 2 + 2, len(before)) + 1):
        words = before[-size:]
        if words[0].lower() in _MINOR_WORDS:
            continue
        if _spells(words, acronym):
            return " ".join(words)
    return None


def _definitions(text: str) -> dict[str, tuple[str, int]]:
    """Acronym -> (expansion, offset) for "Long Form (LF)" and "LF (long form)"."""
    found: dict[str, tuple[str, int]] = {}
    for paren in _PAREN_RE.finditer(text):
        inside = paren.group(1).strip()
        if _ACRONYM_RE.fullmatch(inside):
            acronym = (
                inside.rstrip("s") if inside.endswith("s") and inside[:-1].isupper() else inside
            )
            expansion = _expansion_before(text, paren.start(), acronym)
            if expansion:
                found.setdefault(acronym, (expansion, paren.start() - len(expansion) - 1))
            continue
        before = re.search(r"\b([A-Z][A-Z0-9&]*[A-Z][A-Z0-9&]*)s?\s*$", text[: paren.start()])
        words = inside.split()
        if before and _spells(words, before.group(1)):
            found.setdefault(before.group(1), (inside, before.start()))
    return found


def _acronyms(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    definitions = _definitions(text)
    uses: dict[str, list[int]] = {}
    for found in _ACRONYM_RE.finditer(text):
        uses.setdefault(found.group(1), []).append(found.start())
    listed = []
    for acronym, offsets in uses.items():
        expansion, defined_at = definitions.get(acronym, (None, None))
        if expansion is None and inputs["ignore_common"] and acronym in lists.COMMON_ACRONYMS:
            continue
        if expansion is None:
            status = "undefined"
        elif offsets[0] < defined_at:
            status = "defined_late"
        else:
            status = "defined"
        listed.append(
            {
                "acronym": acronym,
                "count": len(offsets),
                "first_use": offsets[0],
                "expansion": expansion,
                "defined_at": defined_at,
                "status": status,
            }
        )
    return {
        "count": len(listed),
        "undefined": [a["acronym"] for a in listed if a["status"] == "undefined"],
        "defined_late": [a["acronym"] for a in listed if a["status"] == "defined_late"],
        "acronyms": listed,
    }


class ExtractEngine(ChoiceEngine):
    name = "text.extract"
    choice = "kind"
    jobs = {
        "emails": _emails,
        "urls": _urls,
        "phones": _phones,
        "social_tags": _social_tags,
        "dates": _dates,
        "acronyms": _acronyms,
    }


# --- text.transform: British and American spelling ---------------------------------------


def _match_case(original: str, replacement: str) -> str:
    if original.isupper() and len(original) > 1:
        return replacement.upper()
    if original[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


@load_once
def _spelling_table(direction: str, keep_ize: bool) -> dict[str, str]:
    if direction == "to_american":
        return dict(lists.BRITISH_TO_AMERICAN)
    return {
        us: gb
        for gb, us in lists.BRITISH_TO_AMERICAN.items()
        if gb not in lists.ONE_WAY and not (keep_ize and gb in lists.IZE_ONLY)
    }


def _spelling(inputs: dict[str, Any]) -> dict[str, Any]:
    table = _spelling_table(inputs["direction"], inputs["keep_ize"])
    changes: Counter[tuple[str, str]] = Counter()

    def convert(found: re.Match[str]) -> str:
        word = found.group()
        target = table.get(word.lower())
        if target is None:
            return word
        converted = _match_case(word, target)
        changes[(word.lower(), target)] += 1
        return converted

    text = re.sub(r"[A-Za-z]+", convert, inputs["text"])
    return {
        "text": text,
        "changed_words": sum(changes.values()),
        "changes": [
            {"from": old, "to": new, "count": count}
            for (old, new), count in sorted(changes.items(), key=lambda item: item[0])
        ],
    }


# --- text.transform: title case and sentence case ----------------------------------------

_ARTICLES = {"a", "an", "the"}
_PREPOSITIONS = frozenset({
    "about", "above", "across", "after", "against", "along", "among", "around", "at", "before",
    "behind", "below", "beneath", "beside", "between", "beyond", "by", "down", "during",
    "except", "from", "in", "inside", "into", "like", "near", "of", "off", "on", "onto", "out",
    "outside", "over", "past", "per", "since", "through", "throughout", "till", "toward",
    "towards", "under", "underneath", "until", "up", "upon", "via", "with", "within", "without",
})  # fmt: skip
# Chicago: articles, coordinating conjunctions, "to", "as" and every preposition.
_CHICAGO_MINOR = _ARTICLES | {"and", "but", "for", "or", "nor", "to", "as"} | _PREPOSITIONS
_TITLE_MINOR = {
    "chicago": frozenset(_CHICAGO_MINOR),
    # AP: articles, and conjunctions and prepositions of three letters or fewer.
    "ap": frozenset(
        _ARTICLES
        | {
            "and",
            "but",
            "for",
            "nor",
            "or",
            "so",
            "yet",
            "as",
            "at",
            "by",
            "in",
            "of",
            "off",
            "on",
            "out",
            "per",
            "to",
            "up",
            "via",
        }
    ),  # fmt: skip
    # APA 7: minor words are those of three letters or fewer.
    "apa": frozenset(
        _ARTICLES
        | {
            "and",
            "as",
            "but",
            "for",
            "if",
            "nor",
            "or",
            "so",
            "yet",
            "at",
            "by",
            "in",
            "of",
            "off",
            "on",
            "per",
            "to",
            "up",
            "via",
        }
    ),  # fmt: skip
}
_TOKEN_RE = re.compile(r"(\S+)")
_CORE_RE = re.compile(r"^([^\w]*)(.*?)([^\w]*)$", re.DOTALL)
_SUBTITLE_END = (":", "—", "–", "?", "!", ".")


def _keeps_own_case(word: str) -> bool:
    """Acronyms, brands (iPhone, McDonald) and URLs are written as given."""
    return (
        any(c.isupper() for c in word[1:])
        or any(c.isdigit() for c in word)
        or "@" in word
        or "." in word.strip(".")
    )


def _capitalize(word: str) -> str:
    return word[:1].upper() + word[1:]


def _title_word(core: str, style: str, force: bool) -> str:
    if _keeps_own_case(core):
        return core
    parts = core.split("-")
    out = []
    for index, part in enumerate(parts):
        lower = part.lower()
        minor = lower in _TITLE_MINOR[style] and not (force and index == 0)
        out.append(lower if minor else _capitalize(lower))
    return "-".join(out)


def _title_line(line: str, style: str) -> str:
    tokens = list(_TOKEN_RE.finditer(line))
    if line.isupper():  # an all-caps line carries no case information
        line = line.lower()
    pieces = []
    last = 0
    previous = ""
    for index, token in enumerate(tokens):
        lead, core, trail = _CORE_RE.match(line[token.start() : token.end()]).groups()
        first = index == 0 or previous.endswith(_SUBTITLE_END) or lead.startswith(("“", '"'))
        is_last = index == len(tokens) - 1 and style != "apa"
        word = _title_word(core, style, first or is_last) if core else ""
        pieces += [line[last : token.start()], lead, word, trail]
        last = token.end()
        previous = token.group()
    pieces.append(line[last:])
    return "".join(pieces)


def _title_case(inputs: dict[str, Any]) -> dict[str, Any]:
    style = inputs["style"]
    lines = inputs["text"].split("\n")
    return {"text": "\n".join(_title_line(line, style) for line in lines), "style": style}


_ALWAYS_CAPITALIZED = frozenset({
    "i", "i'm", "i've", "i'd", "i'll", "january", "february", "march", "april", "june", "july",
    "august", "september", "october", "november", "december", "monday", "tuesday", "wednesday",
    "thursday", "friday", "saturday", "sunday",
})  # fmt: skip
_SENTENCE_BREAK_RE = re.compile(r"(^|[.!?…][\"'”’)\]]*\s+|\n\s*)(\W*)(\w)")


def _sentence_case(inputs: dict[str, Any]) -> dict[str, Any]:
    keep = {w.lower(): w for w in inputs["keep_words"]}
    text = inputs["text"]
    if text.isupper():
        text = text.lower()

    def word_case(found: re.Match[str]) -> str:
        word = found.group()
        lower = _normal_word(word)
        if lower in keep:
            return keep[lower]
        if lower in _ALWAYS_CAPITALIZED:
            return _capitalize(word.lower())
        if _keeps_own_case(word):
            return word
        return word.lower()

    text = re.sub(r"[^\W\d_][\w'’-]*", word_case, text)
    text = _SENTENCE_BREAK_RE.sub(lambda m: m.group(1) + m.group(2) + m.group(3).upper(), text)
    return {"text": text}


# --- text.transform: typography -----------------------------------------------------------

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


# --- text.transform: whitespace and lines -------------------------------------------------

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


# --- text.transform: HTML to plain text ---------------------------------------------------

_BLOCK_TAGS = frozenset({
    "address", "article", "aside", "blockquote", "dd", "details", "dialog", "div", "dl", "dt",
    "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
    "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tr",
    "ul", "caption",
})  # fmt: skip
_INDENT = "\x00"  # marks list indentation until the text is assembled
_SKIPPED_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe"})


class _TextCollector(html.parser.HTMLParser):
    """Turns HTML into readable plain text: blocks on their own lines, lists as bullets."""

    def __init__(self, links: bool, markdown_headings: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.links = links
        self.markdown_headings = markdown_headings
        self.out: list[str] = []
        self.title: str | None = None
        self._skip = 0
        self._pre = 0
        self._title: list[str] | None = None
        self._lists: list[list[int]] = []  # per open list: [is_ordered, next number]
        self._href: list[str | None] = []

    def _newline(self, blank: bool = False) -> None:
        """End the current line (and leave a blank one) unless the output already does."""
        tail = "".join(self.out[-3:]).rstrip(" ")
        have = len(tail) - len(tail.rstrip("\n")) if self.out else 2
        self.out.append("\n" * max((2 if blank else 1) - have, 0))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._title = []
        if tag in _SKIPPED_TAGS:
            self._skip += 1
            return
        if tag == "br":
            self.out.append("\n")
        elif tag in ("ul", "ol"):
            self._lists.append([tag == "ol", 1])
            self._newline()
        elif tag == "li":
            self._newline()
            ordered, number = self._lists[-1] if self._lists else (False, 1)
            indent = _INDENT * max(len(self._lists) - 1, 0)
            self.out.append(f"{indent}{number}. " if ordered else f"{indent}- ")
            if self._lists:
                self._lists[-1][1] += 1
        elif tag in ("td", "th"):
            self.out.append("\t")
        elif tag in _BLOCK_TAGS:
            self._newline(blank=tag in ("p", "h1", "h2", "h3", "h4", "h5", "h6", "pre"))
            if self.markdown_headings and re.fullmatch(r"h[1-6]", tag):
                self.out.append("#" * int(tag[1]) + " ")
        if tag == "pre":
            self._pre += 1
        elif tag == "a":
            self._href.append(dict(attrs).get("href"))

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self._title is not None:
            self.title = " ".join("".join(self._title).split()) or None
            self._title = None
        if tag in _SKIPPED_TAGS:
            self._skip = max(self._skip - 1, 0)
            return
        if tag in ("ul", "ol") and self._lists:
            self._lists.pop()
        if tag == "pre":
            self._pre = max(self._pre - 1, 0)
        if tag == "a" and self._href:
            href = self._href.pop()
            if self.links and href and href.startswith(("http://", "https://", "mailto:")):
                self.out.append(f" ({href})")
        if tag in _BLOCK_TAGS and tag != "li":
            self._newline(blank=tag in ("p", "h1", "h2", "h3", "h4", "h5", "h6", "pre"))

    def handle_data(self, data: str) -> None:
        if self._title is not None:
            self._title.append(data)
        if self._skip:
            return
        if not self._pre:
            data = re.sub(r"\s+", " ", data)
            tail = "".join(self.out[-2:])
            if not tail or tail.endswith(("\n", " ", "\t", "- ", ". ", _INDENT)):
                data = data.lstrip(" ")
        self.out.append(data)

    def text(self) -> str:
        lines = "".join(self.out).split("\n")
        # Table cells start with a tab: "\tA\tB" becomes "A | B".
        lines = [line.replace("\t", " | ").strip(" |") if "\t" in line else line for line in lines]
        joined = "\n".join(line.rstrip().replace(_INDENT, "  ") for line in lines)
        return re.sub(r"\n{3,}", "\n\n", joined).strip("\n")


def _html_text(inputs: dict[str, Any]) -> dict[str, Any]:
    collector = _TextCollector(inputs["keep_links"], inputs["markdown_headings"])
    collector.feed(inputs["html"])
    collector.close()
    text = collector.text()
    return {
        "text": text,
        "title": collector.title,
        "words": len(_text.words(text)),
        "characters": len(text),
    }


# --- text.transform: numbers to words -----------------------------------------------------

_ONES = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
)  # fmt: skip
_TENS = (
    "_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
)  # fmt: skip
_SCALES = (
    "", "thousand", "million", "billion", "trillion", "quadrillion", "quintillion",
    "sextillion", "septillion", "octillion", "nonillion", "decillion",
)  # fmt: skip
_ORDINAL_ENDINGS = {
    "one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
    "nine": "ninth", "twelve": "twelfth",
}  # fmt: skip
# Currency: major unit (singular, plural), minor unit (singular, plural) or None.
CURRENCIES = {
    "USD": (("dollar", "dollars"), ("cent", "cents")),
    "CAD": (("Canadian dollar", "Canadian dollars"), ("cent", "cents")),
    "AUD": (("Australian dollar", "Australian dollars"), ("cent", "cents")),
    "EUR": (("euro", "euros"), ("cent", "cents")),
    "GBP": (("pound", "pounds"), ("penny", "pence")),
    "CHF": (("franc", "francs"), ("centime", "centimes")),
    "INR": (("rupee", "rupees"), ("paisa", "paise")),
    "JPY": (("yen", "yen"), None),
}


def _under_thousand(number: int, british_and: bool) -> str:
    hundreds, rest = divmod(number, 100)
    words = []
    if hundreds:
        words.append(f"{_ONES[hundreds]} hundred")
    if rest:
        if hundreds and british_and:
            words.append("and")
        if rest < 20:
            words.append(_ONES[rest])
        else:
            tens, ones = divmod(rest, 10)
            words.append(_TENS[tens] + (f"-{_ONES[ones]}" if ones else ""))
    return " ".join(words)


def _cardinal(number: int, british_and: bool = False) -> str:
    if number == 0:
        return "zero"
    groups = []
    while number:
        number, group = divmod(number, 1000)
        groups.append(group)
    words = []
    for scale in range(len(groups) - 1, -1, -1):
        group = groups[scale]
        if not group:
            continue
        # British usage: "one thousand and five".
        if british_and and scale == 0 and group < 100 and words:
            words.append("and")
        words.append(_under_thousand(group, british_and))
        if _SCALES[scale]:
            words.append(_SCALES[scale])
    return " ".join(words)


def _ordinal(number: int, british_and: bool) -> str:
    words = _cardinal(number, british_and)
    head, sep, last = words.rpartition(" ")
    pieces = last.split("-")
    final = pieces[-1]
    if final in _ORDINAL_ENDINGS:
        final = _ORDINAL_ENDINGS[final]
    elif final.endswith("y"):
        final = final[:-1] + "ieth"
    else:
        final += "th"
    return head + sep + "-".join([*pieces[:-1], final])


def _year_words(year: int) -> str:
    if not 1000 <= year <= 9999:
        return _cardinal(year)
    century, rest = divmod(year, 100)
    if rest == 0:
        return f"{_cardinal(century)} hundred" if century % 10 else _cardinal(year)
    if century % 10 == 0 and rest < 10:  # 2005: "two thousand five"
        return _cardinal(year)
    tail = f"oh {_ONES[rest]}" if rest < 10 else _cardinal(rest)
    return f"{_cardinal(century)} {tail}"


def _number_words(inputs: dict[str, Any]) -> dict[str, Any]:
    raw = inputs["number"].replace(",", "").replace(" ", "").replace("_", "")
    negative = raw.startswith("-")
    whole_text, _, fraction = raw.lstrip("+-").partition(".")
    whole = int(whole_text or "0")
    if whole >= 1000 ** len(_SCALES):
        raise EngineError("The number is too large: the whole part may have at most 36 digits.")
    mode = inputs["mode"]
    british = inputs["british_and"]
    sign = "minus " if negative and (whole or fraction.strip("0")) else ""
    if mode in ("ordinal", "year") and fraction:
        raise EngineError(f"A {mode} must be a whole number; remove the decimal part.")
    if mode == "ordinal":
        words = sign + _ordinal(whole, british)
    elif mode == "year":
        words = sign + _year_words(whole)
    elif mode in ("currency", "check"):
        words = sign + _money(whole, fraction, inputs["currency"], mode, british)
    else:
        words = sign + _cardinal(whole, british)
        if fraction:
            words += " point " + " ".join(_ONES[int(d)] for d in fraction)
    return {"words": words, "mode": mode}


def _money(whole: int, fraction: str, currency: str, mode: str, british: bool) -> str:
    (major_one, major_many), minor = CURRENCIES[currency]
    if minor is None and fraction.strip("0"):
        raise EngineError(f"{currency} has no minor unit; give a whole amount.")
    if len(fraction) > 2:
        raise EngineError("Give money with at most two decimal places.")
    cents = int(fraction.ljust(2, "0")) if fraction else 0
    if mode == "check":
        words = _cardinal(whole, british)
        return f"{_capitalize(words)} and {cents:02d}/100 {major_many}"
    words = f"{_cardinal(whole, british)} {major_one if whole == 1 else major_many}"
    if cents and minor:
        words += f" and {_cardinal(cents)} {minor[0] if cents == 1 else minor[1]}"
    return words


class TransformEngine(ChoiceEngine):
    name = "text.transform"
    jobs = {
        "spelling": _spelling,
        "title_case": _title_case,
        "sentence_case": _sentence_case,
        "typography": _typography,
        "whitespace": _whitespace,
        "lines": _lines,
        "html_text": _html_text,
        "number_words": _number_words,
    }


# --- text.compare ------------------------------------------------------------------------


def _shingles(tokens: list[str], size: int) -> set[tuple[str, ...]]:
    if len(tokens) < size:
        return {tuple(tokens)} if tokens else set()
    return {tuple(tokens[i : i + size]) for i in range(len(tokens) - size + 1)}


def _cosine(first: Counter[str], second: Counter[str]) -> float:
    dot = sum(count * second[word] for word, count in first.items())
    norm = math.sqrt(sum(c * c for c in first.values())) * math.sqrt(
        sum(c * c for c in second.values())
    )
    return dot / norm if norm else 0.0


_SIMILARITY_VERDICTS = (
    (0.9, "near-identical"),
    (0.5, "heavily overlapping"),
    (0.2, "partly overlapping"),
    (0.0001, "slightly overlapping"),
)


def _similarity(inputs: dict[str, Any]) -> dict[str, Any]:
    if not inputs["other_text"].strip():
        raise EngineError("Give the second text to compare in other_text.")
    fold: Callable[[str], str] = _normal_word if inputs["ignore_case"] else (lambda w: w)
    first = [fold(w) for w in _require_words(inputs["text"])]
    second = [fold(w) for w in _text.words(inputs["other_text"])]
    if not second:
        raise EngineError("other_text has no words to compare.")
    size = inputs["shingle_size"]
    a, b = _shingles(first, size), _shingles(second, size)
    shared = a & b
    jaccard = len(shared) / len(a | b)
    verdict = next((label for floor, label in _SIMILARITY_VERDICTS if jaccard >= floor), "distinct")
    return {
        "jaccard": _round(jaccard, 4),
        "containment": _round(len(shared) / len(a), 4),
        "cosine": _round(_cosine(Counter(first), Counter(second)), 4),
        "shared_shingles": len(shared),
        "words": len(first),
        "other_words": len(second),
        "verdict": verdict,
    }


def _sentence_key(sentence: str) -> str:
    return " ".join(_normal_word(w) for w in _text.words(sentence))


_MAX_NEAR_DUPLICATE_SENTENCES = 3000


def _similar_group(
    words: set[str],
    groups: list[dict[str, Any]],
    postings: dict[str, list[int]],
    threshold: float,
) -> dict[str, Any] | None:
    """The first group whose words overlap ``words`` by at least ``threshold`` (Jaccard)."""
    shared: Counter[int] = Counter()
    for word in words:
        shared.update(postings.get(word, ()))
    for index in sorted(shared):
        common = shared[index]
        if common / (len(words) + len(groups[index]["words"]) - common) >= threshold:
            return groups[index]
    return None


def _duplicates(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    spans = _sentence_spans(text)
    if not spans:
        raise EngineError("The text has no sentences to compare.")
    threshold = inputs["similarity"]
    if threshold < 1 and len(spans) > _MAX_NEAR_DUPLICATE_SENTENCES:
        raise EngineError(
            f"Near-duplicate search handles up to {_MAX_NEAR_DUPLICATE_SENTENCES} sentences; "
            "use similarity 1 for exact duplicates or send a shorter text."
        )
    groups: list[dict[str, Any]] = []
    by_key: dict[str, dict[str, Any]] = {}
    postings: dict[str, list[int]] = {}  # word -> indexes of the groups that contain it
    for index, (start, end) in enumerate(spans):
        sentence = " ".join(text[start:end].split())
        key = _sentence_key(sentence)
        if len(key.split()) < inputs["min_words"]:
            continue
        words = set(key.split())
        group = by_key.get(key)
        if group is None and threshold < 1:
            group = _similar_group(words, groups, postings, threshold)
        if group is None:
            group = {"sentence": sentence, "words": words, "occurrences": []}
            for word in words:
                postings.setdefault(word, []).append(len(groups))
            groups.append(group)
        by_key[key] = group
        group["occurrences"].append({"index": index, "start": start, "text": sentence})
    repeated = [g for g in groups if len(g["occurrences"]) > 1]
    return {
        "sentences": len(spans),
        "duplicate_groups": len(repeated),
        "repeated_sentences": sum(len(g["occurrences"]) - 1 for g in repeated),
        "duplicates": [
            {
                "sentence": g["sentence"],
                "count": len(g["occurrences"]),
                "occurrences": g["occurrences"],
            }
            for g in repeated
        ],
    }


class CompareEngine(ChoiceEngine):
    name = "text.compare"
    requires = ("pysbd",)
    choice = "comparison"
    jobs = {"similarity": _similarity, "duplicates": _duplicates}


ENGINES: tuple[Engine, ...] = (
    CompareEngine(),
    ExtractEngine(),
    FindEngine(),
    FrequencyEngine(),
    MetricsEngine(),
    TransformEngine(),
)
