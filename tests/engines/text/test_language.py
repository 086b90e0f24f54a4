"""``text.language`` (engines/text/language.py), run through its catalogue tool."""

import pytest

from engines import EngineError


@pytest.mark.parametrize(
    "text, language, name",
    [
        ("Bonjour à tous, la réunion de demain est reportée à jeudi matin.", "fr", "French"),
        ("Der schnelle braune Fuchs springt über den faulen Hund.", "de", "German"),
        ("El rápido zorro marrón salta sobre el perro perezoso.", "es", "Spanish"),
        ("これは日本語の文章です。", "ja", "Japanese"),
    ],
)
def test_language_is_detected(run, text, language, name):
    result = run("language-detector", text=text)
    assert (result["language"], result["name"], result["reliable"]) == (language, name, True)


def test_language_detection_is_deterministic(run):
    text = "Ciao, come stai? Spero bene."
    assert run("language-detector", text=text) == run("language-detector", text=text)


def test_language_of_a_very_short_text_is_not_reliable(run):
    assert run("language-detector", text="ok")["reliable"] is False


def test_language_candidates_are_limited(run):
    text = "Het is een mooie dag om te fietsen langs de gracht."
    result = run("language-detector", text=text, max_candidates=1)
    assert result["candidates"] == [{"language": "nl", "name": "Dutch", "probability": 1.0}]


def test_language_detection_refuses_text_without_letters(run):
    with pytest.raises(EngineError, match="^The text has no letters to detect a language from.$"):
        run("language-detector", text="12345 !!!")
