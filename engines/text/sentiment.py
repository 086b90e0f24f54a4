"""``text.sentiment``: positive, negative or neutral, for the text and each sentence (VADER)."""

from __future__ import annotations

from typing import Any

from engines import _text
from engines.base import Engine, load_once


@load_once
def _vader() -> Any:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


def _sentiment_label(compound: float) -> str:
    # The thresholds VADER's authors recommend.
    if compound >= 0.05:
        return "positive"
    if compound <= -0.05:
        return "negative"
    return "neutral"


class SentimentEngine(Engine):
    name = "text.sentiment"
    requires = ("vaderSentiment",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        text = inputs["text"]
        analyser = _vader()
        scores = analyser.polarity_scores(text)
        per_sentence = []
        if inputs["by_sentence"]:
            for sentence in _text.quick_sentences(text):
                compound = analyser.polarity_scores(sentence)["compound"]
                per_sentence.append(
                    {
                        "text": sentence,
                        "compound": compound,
                        "label": _sentiment_label(compound),
                    }
                )
        return {
            "label": _sentiment_label(scores["compound"]),
            "compound": scores["compound"],
            "positive": scores["pos"],
            "negative": scores["neg"],
            "neutral": scores["neu"],
            "sentences": per_sentence,
        }
