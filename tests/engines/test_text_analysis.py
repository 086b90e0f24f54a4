"""Writing analysis engines: readability, sentiment, spelling, language, word counts."""

import pytest

from engines import EngineError

# --- readability -------------------------------------------------------------------------


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


# --- sentiment ---------------------------------------------------------------------------


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


# --- spelling ----------------------------------------------------------------------------


def test_spelling_finds_misspelled_words_with_offsets_and_suggestions(run):
    # One-letter words ("I") are not checked.
    text = "I recieve teh mesage."
    assert run("spell-checker", text=text) == {
        "words_checked": 3,
        "misspelled": 3,
        "issues": [
            {"word": "recieve", "offset": 2, "suggestions": ["receive", "relieve"]},
            {"word": "teh", "offset": 10, "suggestions": ["the", "ten", "tea"]},
            {"word": "mesage", "offset": 14, "suggestions": ["message", "menage", "metage"]},
        ],
    }
    assert text[14 : 14 + len("mesage")] == "mesage"


def test_spelling_keeps_the_capital_of_the_word_in_suggestions(run):
    issues = run("spell-checker", text="Teh end.", max_suggestions=1)["issues"]
    assert issues == [{"word": "Teh", "offset": 0, "suggestions": ["The"]}]


def test_spelling_can_skip_suggestions(run):
    issues = run("spell-checker", text="I recieve it.", max_suggestions=0)["issues"]
    assert issues == [{"word": "recieve", "offset": 2, "suggestions": []}]


def test_spelling_skips_urls_addresses_handles_acronyms_and_code(run):
    text = (
        "Visit https://exmple.com or mail jhon@exmple.com, ask NASA and @jhonny about #speling "
        "in `fooo` with McDonald on an iPhone; don’t worry, it's fine."
    )
    result = run("spell-checker", text=text)
    assert (result["misspelled"], result["issues"]) == (0, [])


def test_spelling_uses_the_dictionary_of_the_language(run):
    result = run("spell-checker", text="Ich habe einen Hunnd.", language="de")
    assert result["issues"] == [{"word": "Hunnd", "offset": 15, "suggestions": ["Hund", "Hunne"]}]


# --- language detection ------------------------------------------------------------------


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


# --- word counter ------------------------------------------------------------------------


def test_word_counter_counts_everything(run):
    assert run("word-counter", text="Hello world. This is a test!\n\nSecond paragraph here.") == {
        "characters": 52,
        "characters_no_spaces": 43,
        "words": 9,
        "unique_words": 9,
        "sentences": 3,
        "paragraphs": 2,
        "lines": 3,
        "average_word_length": 4.44,
        "average_sentence_words": 3.0,
    }


def test_word_counter_counts_numbers_and_contractions_as_words(run):
    result = run("word-counter", text="It's 3.5 km, isn't it? It is.")
    assert (result["words"], result["unique_words"], result["sentences"]) == (7, 6, 2)


def test_word_counter_of_blank_text_is_zero(run):
    result = run("word-counter", text="   ")
    assert (result["words"], result["sentences"], result["average_word_length"]) == (0, 0, 0)
