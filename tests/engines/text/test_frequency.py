"""``text.frequency`` (engines/text/frequency.py), run through its catalogue tools."""

import pytest

from engines import EngineError


def test_word_frequency_counts_folds_case_and_tracks_coverage(run):
    out = run("word-frequency-counter", text="Tea, tea and more TEA. Coffee? No coffee.", top=2)
    assert out == {
        "total_words": 8,
        "unique_words": 5,
        "hapax_legomena": 3,
        "words": [
            {"word": "tea", "count": 3, "percent": 37.5, "cumulative_percent": 37.5},
            {"word": "coffee", "count": 2, "percent": 25.0, "cumulative_percent": 62.5},
        ],
    }


def test_word_frequency_can_drop_stop_words_and_short_words(run):
    out = run(
        "word-frequency-counter",
        text="The cat and the dog and an ox",
        exclude_stop_words=True,
        min_length=3,
    )
    assert [w["word"] for w in out["words"]] == ["cat", "dog"]


def test_word_ngrams_stay_inside_clauses_unless_told_otherwise(run):
    text = "Open source. Source code is open source"
    inside = run("ngram-counter", text=text, n=2, min_count=1)
    across = run("ngram-counter", text=text, n=2, min_count=1, cross_punctuation=True)
    assert ("source source" in [g["ngram"] for g in inside["ngrams"]]) is False
    assert "source source" in [g["ngram"] for g in across["ngrams"]]
    assert inside["ngrams"][0] == {"ngram": "open source", "count": 2, "percent": 40.0}


def test_character_ngrams(run):
    out = run("ngram-counter", text="banana", unit="character", n=3, min_count=2)
    assert out["ngrams"] == [{"ngram": "ana", "count": 2, "percent": 50.0}]
    assert out["total_ngrams"] == 4


def test_ngrams_refuse_a_text_shorter_than_n(run):
    with pytest.raises(EngineError, match="too short for 5-word n-grams"):
        run("ngram-counter", text="only three words", n=5)
