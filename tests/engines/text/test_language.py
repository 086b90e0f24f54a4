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


@pytest.mark.parametrize("text", ["生日快乐！", "我五分钟后到。"])
def test_chinese_characters_alone_are_never_korean(run, text):
    # langdetect alone calls both Korean: its Korean profile holds Hanja.
    assert run("language-detector", text=text)["language"] == "zh-cn"


@pytest.mark.parametrize(
    "text, language",
    [("שלום", "he"), ("Ціна висока.", "uk"), ("ありがとう", "ja"), ("Γεια σου", "el")],
)
def test_letters_only_one_language_writes_decide_even_a_short_text(run, text, language):
    result = run("language-detector", text=text)
    assert (result["language"], result["reliable"]) == (language, True)
    assert result["candidates"] == [
        {"language": language, "name": result["name"], "probability": 1.0}
    ]


def test_cyrillic_letters_of_no_single_alphabet_leave_the_choice_to_langdetect(run):
    # Ukrainian's ї beside Russian's ы: no one alphabet holds both, so none is ruled out.
    result = run("language-detector", text="Київ и мы")
    assert result["language"] in {"bg", "mk", "ru", "uk"} and result["reliable"] is False


def test_a_short_cyrillic_text_without_telling_letters_stays_unreliable(run):
    assert run("language-detector", text="Вона вдома.")["reliable"] is False
