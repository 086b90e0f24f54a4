"""Language identification: accuracy of the detected language on 240 short texts in 20
languages (``data/languages.jsonl``: a third of 3 to 6 words, and neighbours such as es/pt,
cs/pl, ru/uk, nl/de). Baseline: langdetect's ``detect()`` (seed 0) on the raw text.

The tool always names a language; an answer it flags as not reliable still counts by its
language, and ``detail`` says how many were flagged and what the accuracy would be if each
of them counted as wrong."""

from __future__ import annotations

import unicodedata

from bench.quality import Figure, run_engine, samples

SHORT_WORDS = 6


def _words(text: str) -> int:
    """Words as the samples count them: Chinese and Japanese have no spaces, so two of their
    characters make about one word."""
    wide = sum(c.isalpha() and unicodedata.east_asian_width(c) in ("W", "F") for c in text)
    return round(wide / 2) if wide else len(text.split())


def _langdetect(text: str) -> str:
    from langdetect import DetectorFactory, detect

    DetectorFactory.seed = 0  # langdetect samples randomly: fixed, one text has one answer
    return detect(text)


def measure() -> list[Figure]:
    items = samples("languages")
    answers = [run_engine("language-detector", {"text": item["text"]}) for item in items]
    engine = [answer["language"] for answer in answers]
    baseline = [_langdetect(item["text"]) for item in items]

    def accuracy(labels: list[str], subset: list[int]) -> float:
        return sum(labels[i] == items[i]["lang"] for i in subset) / len(subset)

    def unreliable(subset: list[int]) -> str:
        flagged = [i for i in subset if not answers[i]["reliable"]]
        right = sum(engine[i] == items[i]["lang"] for i in flagged)
        strict = sum(engine[i] == items[i]["lang"] and answers[i]["reliable"] for i in subset)
        return (
            f"{len(flagged)} flagged not reliable ({right} of them right); "
            f"{strict / len(subset):.3f} if those count as wrong"
        )

    every = list(range(len(items)))
    short = [i for i, item in enumerate(items) if _words(item["text"]) <= SHORT_WORDS]
    return [
        Figure("language", "accuracy", accuracy(engine, every), accuracy(baseline, every),
               "langdetect detect(), seed 0", len(items), detail=unreliable(every)),
        Figure("language", f"accuracy ({SHORT_WORDS} words or fewer)", accuracy(engine, short),
               accuracy(baseline, short), "langdetect detect(), seed 0", len(short),
               detail=unreliable(short)),
    ]  # fmt: skip
