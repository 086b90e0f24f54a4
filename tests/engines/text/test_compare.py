"""``text.compare`` (engines/text/compare.py), run through its catalogue tools."""

import pytest

from engines import EngineError


def test_similarity_of_identical_texts_is_one(run):
    text = "The quick brown fox jumps over the lazy dog"
    out = run("text-similarity-checker", text=text, other_text=text.upper())
    assert (out["jaccard"], out["cosine"], out["verdict"]) == (1.0, 1.0, "near-identical")


def test_similarity_of_unrelated_texts_is_zero(run):
    out = run("text-similarity-checker", text="red green blue", other_text="one two three")
    assert (out["jaccard"], out["verdict"]) == (0.0, "distinct")


def test_similarity_needs_the_second_text(run):
    with pytest.raises(EngineError, match="other_text"):
        run("text-similarity-checker", text="hello there")


def test_duplicate_finder_ignores_case_punctuation_and_short_sentences(run):
    text = "Thanks. Thanks. We ship worldwide today. WE SHIP WORLDWIDE TODAY!"
    out = run("duplicate-sentence-finder", text=text)
    assert out["duplicate_groups"] == 1
    assert [o["start"] for o in out["duplicates"][0]["occurrences"]] == [16, 41]
