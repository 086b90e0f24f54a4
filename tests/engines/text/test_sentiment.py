"""``text.sentiment`` (engines/text/sentiment.py), run through its catalogue tool."""

import pytest


@pytest.mark.parametrize(
    "text, label, compound",
    [
        ("I love this phone!", "positive", 0.6696),
        ("This is the worst service ever.", "negative", -0.6249),
        ("The box is blue.", "neutral", 0.0),
    ],
)
def test_sentiment_labels_text_by_compound_score(run, text, label, compound):
    result = run("sentiment-analyzer", text=text)
    assert (result["label"], result["compound"], result["sentences"]) == (label, compound, [])


def test_sentiment_shares_add_up_to_one(run):
    result = run("sentiment-analyzer", text="I love this phone!")
    assert (result["positive"], result["negative"], result["neutral"]) == (0.6, 0.0, 0.4)


def test_sentiment_can_rate_each_sentence(run):
    text = "Great food. Awful music. We left at nine."
    assert run("sentiment-analyzer", text=text, by_sentence=True)["sentences"] == [
        {"text": "Great food.", "compound": 0.6249, "label": "positive"},
        {"text": "Awful music.", "compound": -0.4588, "label": "negative"},
        {"text": "We left at nine.", "compound": 0.0, "label": "neutral"},
    ]
