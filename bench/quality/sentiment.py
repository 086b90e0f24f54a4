"""Sentiment: accuracy of the overall label on short reviews, posts and tickets
(``data/sentiment.jsonl``: a third or more with contrast, negation or mixed feelings).
Baseline: VADER's compound score on the whole text with its authors' thresholds."""

from __future__ import annotations

from bench.quality import Figure, run_engine, samples

HARD = {"contrast", "negation", "mixed"}


def _vader_label(text: str) -> str:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    compound = SentimentIntensityAnalyzer().polarity_scores(text)["compound"]
    return "positive" if compound >= 0.05 else "negative" if compound <= -0.05 else "neutral"


def measure() -> list[Figure]:
    items = samples("sentiment")
    engine = [run_engine("sentiment-analyzer", {"text": item["text"]})["label"] for item in items]
    baseline = [_vader_label(item["text"]) for item in items]

    def accuracy(labels: list[str], subset: list[int]) -> float:
        return sum(labels[i] == items[i]["label"] for i in subset) / len(subset)

    every = list(range(len(items)))
    hard = [i for i, item in enumerate(items) if item["kind"] in HARD]
    plain = [i for i, item in enumerate(items) if item["kind"] == "plain"]
    return [
        Figure("sentiment", "accuracy", accuracy(engine, every), accuracy(baseline, every),
               "VADER on the whole text", len(items)),
        Figure("sentiment", "accuracy (contrast/negation/mixed)", accuracy(engine, hard),
               accuracy(baseline, hard), "VADER on the whole text", len(hard)),
        Figure("sentiment", "accuracy (plain)", accuracy(engine, plain),
               accuracy(baseline, plain), "VADER on the whole text", len(plain)),
    ]  # fmt: skip
