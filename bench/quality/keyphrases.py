"""Keyphrases: F1@10 against the phrases a human indexer would file 27 documents under
(``data/keyphrases.jsonl``: 194 to 224 words each, technology, medicine, history, cooking,
finance, sport, environment, law, education and travel; 9 to 12 gold phrases each), and the
share of returned phrases that are fragments.

The product's engine is ``keyword-extractor`` (``seo.keywords``) with its defaults: at most
10 keyphrases of up to 3 words, English. Baseline: YAKE as the engine called it before it
learnt to keep to whole phrases (``KeywordExtractor(lan="en", n=3, top=10,
dedup_lim=0.9)``).

- F1@10: per document, over the 10 (or fewer) phrases returned, a phrase matching a gold one
  after lowercasing and collapsing spaces; the mean over the documents.
- fragments: of all the phrases returned, the share that is no whole phrase of the text: it
  starts or ends with a stop word, or has no occurrence that stays inside a sentence without
  punctuation between its words and keeps a capitalized name whole ("began in Great" of
  "began in Great Britain", "World Health" of "World Health Organization"). Lower is better.
"""

from __future__ import annotations

import re
from typing import Any

from bench.quality import Figure, run_engine, samples

_BASELINE = "YAKE as the engine called it before (n=3, top=10, dedup 0.9)"
_WORD = r"[^\W_][\w'’-]*"


def _baseline(text: str) -> list[str]:
    import yake

    extractor = yake.KeywordExtractor(lan="en", n=3, top=10, dedup_lim=0.9)
    return [keyword for keyword, _ in extractor.extract_keywords(text)]


def _engine(text: str) -> list[str]:
    return [k["keyword"] for k in run_engine("keyword-extractor", {"text": text})["keywords"]]


def _normal(phrase: str) -> str:
    return " ".join(phrase.lower().split())


def _f1(found: list[str], gold: list[str]) -> float:
    hits = len({_normal(k) for k in found} & {_normal(k) for k in gold})
    if not hits:
        return 0.0
    precision, recall = hits / len(found), hits / len(gold)
    return 2 * precision * recall / (precision + recall)


def _capitalized(word: str | None) -> bool:
    return bool(word) and word[0].isupper()


def _whole_occurrence(phrase: str, text: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` with only spaces between its words and without
    cutting a capitalized name: the word right before it (unless that word opens a sentence)
    or right after it capitalized while the phrase's edge word is too."""
    words = phrase.split()
    # A possessive 's may follow: "the central bank's rate" holds "central bank".
    pattern = (
        r"(?<![\w'’-])" + r"[ \t]+".join(map(re.escape, words)) + r"(?:(?=['’]s\b)|(?![\w'’-]))"
    )
    for match in re.finditer(pattern, text, re.IGNORECASE):
        found = match.group().split()
        before = re.search(rf"({_WORD})[ \t]+$", text[: match.start()])
        after = re.match(rf"[ \t]+({_WORD})", text[match.end() :])
        cut_before = (
            before is not None
            and _capitalized(before.group(1))
            and not _opens_sentence(text[: before.start()])
            and _capitalized(found[0])
        )
        cut_after = after is not None and _capitalized(after.group(1)) and _capitalized(found[-1])
        if not cut_before and not cut_after:
            return True
    return False


def _opens_sentence(before: str) -> bool:
    """Whether a word after ``before`` opens a sentence (or a line)."""
    before = before.rstrip(" \t")
    return not before or before[-1] in ".!?:;\n\"“‘('"


def _fragment(phrase: str, text: str, stop_words: frozenset[str]) -> bool:
    words = phrase.lower().split()
    if words[0] in stop_words or words[-1] in stop_words:
        return True
    return not _whole_occurrence(phrase, text)


def _scores(items: list[dict[str, Any]], found: list[list[str]]) -> tuple[float, float, int]:
    from engines import _text

    stop_words = _text.stop_words("en")
    f1 = sum(_f1(k, item["keyphrases"]) for item, k in zip(items, found, strict=True))
    returned = sum(len(k) for k in found)
    fragments = sum(
        _fragment(phrase, item["text"], stop_words)
        for item, phrases in zip(items, found, strict=True)
        for phrase in phrases
    )
    return f1 / len(items), fragments / returned, returned


def measure() -> list[Figure]:
    items = samples("keyphrases")
    engine = _scores(items, [_engine(item["text"]) for item in items])
    baseline = _scores(items, [_baseline(item["text"]) for item in items])
    return [
        Figure("keyphrases", "F1@10", engine[0], baseline[0], _BASELINE, len(items)),
        Figure("keyphrases", "fragments", engine[1], baseline[1], _BASELINE, engine[2],
               higher_is_better=False,
               detail=f"of {engine[2]} phrases returned (baseline {baseline[2]})"),
    ]  # fmt: skip
