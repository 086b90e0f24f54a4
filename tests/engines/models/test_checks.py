"""What a text model's answer must pass: loops and the tools' own checks."""

import json

import pytest

from catalogue import load_catalogue
from engines.models import checks, llm

SENTENCE = "The function returns a new list of the items that have not been seen before, in order."
REVIEWS = "Love it.\nSync fails.\n\nSupport was quick.\nSync fails again after the update."


# --- loops -------------------------------------------------------------------------------


def test_a_sentence_said_over_and_over_is_a_loop():
    assert checks.looping(f"Intro. {SENTENCE} {SENTENCE} {SENTENCE}")
    assert checks.looping("It is " + "very " * 40 + "good.")


def test_a_repeated_unit_test_is_a_loop():
    test = (
        "def test_clamp_keeps_values_within_bounds():\n"
        "    assert clamp(5, 0, 10) == 5\n    assert clamp(-3, 0, 10) == 0\n\n"
    )
    assert checks.looping("```python\n" + test * 3 + "```")


def test_a_sentence_said_twice_or_a_short_refrain_is_not_a_loop():
    assert not checks.looping(f"Intro. {SENTENCE} {SENTENCE} Then it ends.")
    assert not checks.looping("Na na na, hey hey hey. Goodbye.")


def test_a_chorus_between_verses_is_not_a_loop():
    chorus = "And I hear the sea in the traffic, rolling in on the evening rain. "
    verses = [f"Verse {n}: a line about the harbour and the gulls, number {n}. " for n in range(3)]
    assert not checks.looping(chorus.join(verses) + chorus)


def test_twice_at_the_end_of_an_answer_cut_at_its_token_limit_is_a_loop():
    text = f"Intro. {SENTENCE} {SENTENCE}"
    assert not checks.looping(text)
    assert checks.looping(text, truncated=True)
    assert not checks.looping(f"{SENTENCE} {SENTENCE} And then something else.", truncated=True)


def test_a_loop_is_seen_as_the_answer_is_written():
    assert checks.ends_in_loop(f"Intro. {SENTENCE} {SENTENCE} {SENTENCE}")
    assert not checks.ends_in_loop(f"{SENTENCE} {SENTENCE} {SENTENCE} Then a new thought came.")


@pytest.mark.parametrize(
    "slug", sorted(t.slug for t in load_catalogue() if t.engine in ("llm.chat", "vision.chat"))
)
def test_no_example_of_a_model_tool_loops_or_fails_its_checks(slug):
    tool = load_catalogue().get(slug)
    for example in tool.examples:
        output = example["output"]
        answer = json.dumps(output) if "text" not in output else output["text"]
        assert not checks.looping(answer)
        assert checks.problems(output, example["input"], tool.params.get("checks", {})) == []


@pytest.mark.parametrize("slug", sorted(t.slug for t in load_catalogue() if "checks" in t.params))
def test_the_declared_checks_name_inputs_and_outputs_of_their_tool(slug):
    tool = load_catalogue().get(slug)
    assert llm.check_params(tool.params, tool.inputs, tool.output) == []


# --- the tools' own checks ---------------------------------------------------------------

CODE = "def area(w, h):\n    return w * h"
DOCUMENTED = 'def area(w, h):\n    """Return the area of a w by h rectangle."""\n    return w * h'


def test_changes_refuses_the_input_handed_back():
    check = {"changes": {"input": "code", "output": ["text"]}}
    assert checks.problems({"text": CODE + "\n"}, {"code": CODE}, check) == [
        "text hands code back unchanged"
    ]
    assert checks.problems({"text": DOCUMENTED}, {"code": CODE}, check) == []


def test_keeps_refuses_an_answer_that_drops_the_input():
    check = {"keeps": {"input": "code", "output": ["text"]}}
    prose = "This function multiplies the width by the height."
    assert checks.problems({"text": prose}, {"code": CODE}, check) == [
        "text does not keep the lines of code"
    ]
    assert checks.problems({"text": DOCUMENTED}, {"code": CODE}, check) == []


def test_at_most_lines_refuses_counts_beyond_the_inputs_lines():
    check = {"at_most_lines": {"input": "responses", "output": ["read", "themes/*/count"]}}
    output = {"read": 4, "themes": [{"count": 2}, {"count": 8}]}
    assert checks.problems(output, {"responses": REVIEWS}, check) == [
        "themes/1/count is 8, more than the 4 lines of responses"
    ]


def test_quotes_must_come_from_the_input_trimmed_filler_and_ellipses_allowed():
    check = {"quotes": {"input": "text", "output": ["quotes/*"]}}
    text = "I, um, I nearly closed the second shop. The fix was boring, and it saved us 22 percent."
    good = ["I nearly closed the second shop.", "The fix was boring ... saved us 22 percent", ""]
    assert checks.problems({"quotes": good}, {"text": text}, check) == []
    invented = ["I'm going to make it work for you, I'm going to make it work"]
    assert checks.problems({"quotes": invented}, {"text": text}, check) == [
        "quotes/0 is not a quote from text"
    ]


def test_links_refuses_web_addresses_the_input_does_not_hold():
    check = {"links": {"input": "code", "output": ["text"]}}
    code = "# See https://docs.example.org/sum.\ndef total(xs):\n    return sum(xs)"
    cited = "It sums the list, as https://docs.example.org/sum says."
    assert checks.problems({"text": cited}, {"code": code}, check) == []
    made_up = "pytest, by Alex Chen: https://github.com/alex-chen/testframework-jf\n"
    assert checks.problems({"text": made_up}, {"code": code}, check) == [
        "text links to https://github.com/alex-chen/testframework-jf, which code does not hold"
    ]
    assert checks.problems({"text": "See www.made-up.dev."}, {"code": code}, check) == [
        "text links to www.made-up.dev, which code does not hold"
    ]


def test_tests_must_parse_and_call_the_given_code_not_a_stand_in():
    check = {"tests": {"input": "code", "output": ["text"]}}
    code = "def is_even(n):\n    return n % 2 == 0"
    good = "```python\nfrom even import is_even\n\ndef test_two():\n    assert is_even(2)\n```"
    assert checks.problems({"text": good}, {"code": code}, check) == []
    unittest = (
        "```python\nimport unittest\n\nclass TestEven(unittest.TestCase):\n"
        "    def test_two(self):\n        self.assertTrue(is_even(2))\n```"
    )
    assert checks.problems({"text": unittest}, {"code": code}, check) == []
    # What the embedded model wrote: a stand-in it tests, prose, a test of nothing given.
    stand_in = "```python\ndef is_even():\n    return False\n\nassert is_even() == False\n```"
    json_like = 'pytest -f pattern = {\n  "test": {"name": "is_even"}\n}'
    nothing = "```python\ndef test_math():\n    assert 1 + 1 == 2\n```"
    assert [
        checks.problems({"text": text}, {"code": code}, check)
        for text in (stand_in, json_like, nothing)
    ] == [
        ["text defines no test of code"],
        ["text holds no Python code that parses, for the tests of code"],
        ["text calls none of the functions of code"],
    ]
    redefines = (
        "```python\ndef is_even(n):\n    return True\n\ndef test_it():\n    assert is_even(3)\n```"
    )
    assert checks.problems({"text": redefines}, {"code": code}, check) == [
        "text defines its own is_even instead of testing the one of code"
    ]
    # Code in another language is not looked at.
    assert checks.problems({"text": "anything"}, {"code": "function f() { return 1 }"}, check) == []


BAKERY = (
    "Our small bakery in Leeds now ships sourdough bread nationwide, baked the same morning and "
    "delivered in two days."
)
FACTS = {"facts": {"input": "text", "output": ["text"]}}


def test_facts_refuses_the_places_the_embedded_model_made_up():
    """What users saw: the rewrite moved the bakery to London and its customers to Europe."""
    invented = (
        "The local bakery in London has successfully transported its products throughout "
        "Europe. It is also working on climate initiatives with its partners."
    )
    assert checks.problems({"text": invented}, {"text": BAKERY}, FACTS) == [
        "text names 'London', which no input holds"
    ]
    assert checks.invented_facts(invented, checks._held_facts({"text": BAKERY})) == [
        "London",
        "Europe",
    ]


def test_facts_accepts_a_faithful_rewrite_in_other_words_case_and_digits():
    faithful = (
        "Our little LEEDS bakery now sends its sourdough across the country: baked that very "
        "morning, it reaches you within 2 days."
    )
    assert checks.problems({"text": faithful}, {"text": BAKERY}, FACTS) == []
    # The other way round, and larger numbers: words and digits are the same fact.
    given = {"text": "We raised 3,400 pounds at the fair, enough for twenty-five tablets."}
    said = "The fair raised three thousand four hundred pounds, which buys 25 tablets."
    assert checks.problems({"text": said}, given, FACTS) == []


@pytest.mark.parametrize(
    ("answer", "invented"),
    [
        ("The bakery opened in 1998 and ships in two days.", ["1998"]),  # a year
        ("Orders placed on Monday arrive in two days.", ["Monday"]),  # a day
        ("The bakery, run by Sarah Jones, ships in two days.", ["Sarah", "Jones"]),  # a person
        ("Leeds bakery ships via DHL in two days.", ["DHL"]),  # an organisation (acronym)
        ("Leeds bakery ships in two days to 40 cities.", ["40"]),
        ("Leeds bakery ships in three days.", ["three"]),
        ("It ships from Leeds at 9:30 each morning, in two days.", ["9:30"]),
    ],
)
def test_facts_refuses_numbers_dates_and_names_the_input_does_not_hold(answer, invented):
    assert checks.invented_facts(answer, checks._held_facts({"text": BAKERY})) == invented


def test_facts_reads_every_input_and_lets_letters_be_letters():
    """A reply may name what any input gives (the business, the reviewer); the greeting,
    the sign-off, a placeholder, a list's numbering and a bold label are no facts."""
    inputs = {
        "review": "Tom at reception was great, but breakfast was late.",
        "business": "The Harbour Inn",
    }
    reply = (
        "Dear Guest,\n\nThank you for your kind words about Tom! I'm sorry breakfast was late.\n"
        "1. We have spoken to the kitchen.\n2. **Next time** Ask for a tray.\n\n"
        "Kind Regards,\nThe Team at The Harbour Inn\n[Your Name]"
    )
    check = {"facts": {"input": "review", "output": ["text"]}}
    assert checks.problems({"text": reply}, inputs, check) == []
    assert checks.problems({"text": reply + "\nSee you in Paris!"}, inputs, check) == [
        "text names 'Paris', which no input holds"
    ]


def test_facts_in_a_title_case_headline_checks_only_numbers_and_acronyms():
    check = {"facts": {"input": "text", "output": ["text"]}}
    assert (
        checks.problems(
            {"text": "Leeds Bakery Ships Fresh Sourdough Nationwide"}, {"text": BAKERY}, check
        )
        == []
    )
    assert checks.problems(
        {"text": "Leeds Bakery Ships Sourdough In 48 Hours"}, {"text": BAKERY}, check
    ) == ["text names '48', which no input holds"]
    # A day written short in the input is the same fact as its full name.
    held = checks._held_facts({"text": "closed sat 2 to 4am"})
    assert checks.invented_facts("Closed on Saturday from 2:00 to 4:00 a.m.", held) == []


def test_a_path_that_leads_nowhere_checks_nothing():
    check = {"quotes": {"input": "text", "output": ["quotes/*/quote"]}}
    assert checks.problems({"quotes": "not a list"}, {"text": "words"}, check) == []


def test_check_declared_finds_names_that_are_not_there():
    inputs = {"properties": {"code": {"type": "string"}, "count": {"type": "integer"}}}
    output = {"properties": {"text": {"type": "string"}, "n": {"type": "integer"}}}
    declared = {
        "keeps": {"input": "count", "output": ["text", "missing"]},
        "at_most_lines": {"input": "code", "output": ["text"]},
    }
    assert checks.check_declared(declared, inputs, output) == [
        "checks.keeps: count is not a text input of the tool.",
        "checks.keeps: missing is not in the output schema.",
        "checks.at_most_lines: text is not of type integer.",
    ]
