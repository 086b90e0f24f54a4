"""``text.transform`` (engines/text/transform.py), run through its catalogue tools."""

import pytest

from engines import EngineError


def test_spelling_converts_to_american_keeping_case(run):
    out = run("british-american-spelling-converter", text="COLOUR, Colour and colourful.")
    assert out["text"] == "COLOR, Color and colorful."
    assert out["changes"] == [
        {"from": "colour", "to": "color", "count": 2},
        {"from": "colourful", "to": "colorful", "count": 1},
    ]


def test_spelling_to_british_leaves_ambiguous_words_and_can_keep_ize(run):
    text = "Check the tire and organize the program."
    out = run("british-american-spelling-converter", text=text, direction="to_british")
    assert out["text"] == "Check the tire and organise the program."
    oxford = run(
        "british-american-spelling-converter", text=text, direction="to_british", keep_ize=True
    )
    assert oxford["changed_words"] == 0


@pytest.mark.parametrize(
    ("style", "expected"),
    [
        ("ap", "Gone With the Wind: A Story of the South"),
        ("chicago", "Gone with the Wind: A Story of the South"),
        ("apa", "Gone With the Wind: A Story of the South"),
    ],
)
def test_title_case_styles(run, style, expected):
    out = run("title-case-converter", text="gone with the wind: a story of the south", style=style)
    assert out["text"] == expected


def test_title_case_keeps_acronyms_and_capitalises_a_final_minor_word(run):
    out = run("title-case-converter", text="what NASA is looking for", style="chicago")
    assert out["text"] == "What NASA Is Looking For"


def test_sentence_case_keeps_acronyms_months_and_given_names(run):
    out = run(
        "sentence-case-converter",
        text="Our New API Ships In May. Ask Anna From Acme",
        keep_words=["Anna", "Acme"],
    )
    assert out["text"] == "Our new API ships in may. Ask Anna from Acme"


def test_title_case_opens_a_ligature_or_digraph_in_title_case_not_upper_case(run):
    # "ﬁ".upper() is "FI" and "ǆ".upper() "Ǆ": a word opens with "Fi" and "ǅ".
    out = run("title-case-converter", text="the ﬁnest ﬂowers of ǆemal", style="chicago")
    assert out["text"] == "The Finest Flowers of ǅemal"


def test_sentence_case_opens_a_ligature_or_digraph_in_title_case(run):
    out = run("sentence-case-converter", text="ﬁnest hour. ﬂowers bloom! ǆemal came; i left.")
    assert out["text"] == "Finest hour. Flowers bloom! ǅemal came; I left."


def test_typography_uses_the_locale_quotes_and_leaves_code_alone(run):
    out = run("typography-fixer", text='Er sagte "ja" -- `x = "y"`', locale="de")
    assert out["text"] == 'Er sagte „ja“—`x = "y"`'
    assert out["changes"]["quotes"] == 2 and out["changes"]["dashes"] == 1


def test_typography_can_leave_spaces_alone(run):
    out = run("typography-fixer", text="It weighs 5 kg", non_breaking_spaces=False)
    assert out["text"] == "It weighs 5 kg"


def test_whitespace_cleaner_can_remove_every_blank_line(run):
    out = run("whitespace-cleaner", text="a  b \n\n\n c\u200b\n", blank_lines="remove")
    assert out["text"] == "a b\nc"
    assert out["invisible_removed"] == 1


def test_line_sorter_sorts_by_length_descending_keeping_duplicates(run):
    out = run(
        "line-sorter", text="bb\na\nccc\na", sort="length", descending=True, remove_duplicates=False
    )
    assert out["text"] == "ccc\nbb\na\na"


def test_html_to_text_handles_nested_lists_tables_and_pre(run):
    html = (
        "<ul><li>One<ul><li>Sub</li></ul></li></ul>"
        "<table><tr><td>a</td><td>b</td></tr></table><pre>x  = 1</pre>"
    )
    out = run("html-to-plain-text", html=html)
    assert out["text"] == "- One\n  - Sub\na | b\n\nx  = 1"
    assert out["title"] is None


@pytest.mark.parametrize(
    ("number", "mode", "expected"),
    [
        ("0", "cardinal", "zero"),
        ("1,000,001", "cardinal", "one million one"),
        ("3.14", "cardinal", "three point one four"),
        ("-7", "cardinal", "minus seven"),
        ("23", "ordinal", "twenty-third"),
        ("100", "ordinal", "one hundredth"),
        ("2000", "year", "two thousand"),
        ("1066", "year", "ten sixty-six"),
        ("1.5", "currency", "one dollar and fifty cents"),
    ],
)
def test_number_to_words(run, number, mode, expected):
    assert run("number-to-words", number=number, mode=mode)["words"] == expected


def test_number_to_words_british_and_and_pence(run):
    out = run("number-to-words", number="105.01", mode="currency", currency="GBP", british_and=True)
    assert out["words"] == "one hundred and five pounds and one penny"


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"number": "1.5", "mode": "ordinal"}, "A ordinal must be a whole number"),
        ({"number": "10.5", "mode": "currency", "currency": "JPY"}, "JPY has no minor unit"),
        ({"number": "1.999", "mode": "currency"}, "at most two decimal places"),
        ({"number": "1" * 37}, "too large"),
    ],
)
def test_number_to_words_refuses_what_cannot_be_spelled(run, inputs, message):
    with pytest.raises(EngineError, match=message):
        run("number-to-words", **inputs)
