"""``text.readability`` (engines/text/readability.py), run through its catalogue tool."""

import pytest

from engines import EngineError


def test_readability_of_a_known_sentence(run):
    result = run("readability-analyzer", text="The cat sat on the mat.")
    # Flesch: 206.835 - 1.015 * (6 words / 1 sentence) - 84.6 * (6 syllables / 6 words)
    assert result["flesch_reading_ease"] == 116.15
    assert (result["words"], result["sentences"], result["syllables"]) == (6, 1, 6)
    assert (result["reading_ease_label"], result["meets_target_grade"]) == ("Very easy", True)


def test_readability_of_dense_prose_is_hard(run):
    text = (
        "The implementation of comprehensive organizational restructuring necessitates "
        "considerable deliberation regarding interdepartmental communication methodologies and "
        "accountability frameworks."
    )
    result = run("readability-analyzer", text=text)
    assert result["reading_ease_label"] == "Very difficult"
    assert result["flesch_reading_ease"] < 0
    assert result["flesch_kincaid_grade"] > 20
    assert (result["consensus_grade"], result["meets_target_grade"]) == (20.0, False)
    assert result["difficult_words"] == 13


def test_readability_target_grade_decides_the_verdict(run):
    text = "Plants need light to grow. They use sunlight to turn water and air into food."
    assert run("readability-analyzer", text=text, target_grade=1)["meets_target_grade"] is False


def test_readability_never_downloads_cmudict(run, monkeypatch):
    import nltk

    def refuse(*args, **kwargs):
        raise AssertionError("nltk.download was called")

    monkeypatch.setattr(nltk, "download", refuse)
    assert run("readability-analyzer", text="Photosynthesis happens.")["syllables"] == 7


def test_readability_refuses_text_without_words(run):
    with pytest.raises(EngineError, match="^The text has no words to score.$"):
        run("readability-analyzer", text="!!! ???")
