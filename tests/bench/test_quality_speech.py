"""bench/quality/speech.py's scoring (speaking and transcribing take minutes: run the bench)."""

import pytest

from bench.quality import speech


@pytest.mark.parametrize(
    ("number", "words"),
    [
        (0, "zero"),
        (12, "twelve"),
        (40, "forty"),
        (45, "forty five"),
        (100, "one hundred"),
        (1204, "one thousand two hundred four"),
        (250_000, "two hundred fifty thousand"),
    ],
)
def test_spelled(number, words):
    assert speech.spelled(number) == words


def test_words_leave_out_case_and_punctuation_and_spell_numerals():
    assert speech.words("Our train was 40 minutes late; it's 1,204 km, well-known.") == [
        "our", "train", "was", "forty", "minutes", "late", "its",
        "one", "thousand", "two", "hundred", "four", "km", "well", "known",
    ]  # fmt: skip
    assert speech.words("Children under twelve") == speech.words("children under 12.")


def test_word_error_rate_counts_edits_over_the_reference_words():
    pairs = [
        ("The recipe needs two cups of flour.", "The recipe needs to cut some flour"),  # 3 of 7
        ("See you soon.", "see you soon"),  # 0 of 3
    ]
    assert speech.word_error_rate(pairs) == pytest.approx(3 / 10)
    assert speech.word_error_rate([("Forty minutes late.", "40 minutes late")]) == 0


def test_every_sentence_is_written_without_numerals():
    """Numerals in the references would be scored against Whisper's own way of writing them."""
    assert len(speech.SENTENCES) == 15
    assert not any(character.isdigit() for sentence in speech.SENTENCES for character in sentence)
