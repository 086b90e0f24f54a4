"""``text.spelling``, the spell checker (engines/text/spell_check.py), run through its tool."""


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
