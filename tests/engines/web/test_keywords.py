"""``seo.keywords`` (engines/web/keywords.py), run through its catalogue tools."""

import pytest

SOLAR = (
    "Solar panels convert sunlight into electricity. Solar panels work best on south-facing "
    "roofs. The cost of solar panels has fallen by 80 percent in ten years, so more homeowners "
    "now install solar panels. Batteries store the electricity for the night."
)
BANK = (
    "The Bank of England raised interest rates on Thursday. The central bank's main tool "
    "against inflation is the interest rate. Passwords are easy to steal and hard to remember."
)


def keywords(run, text, **inputs) -> list[str]:
    return [k["keyword"] for k in run("keyword-extractor", text=text, **inputs)["keywords"]]


def test_keywords_rank_the_main_topic_first(run):
    assert run("keyword-extractor", text=SOLAR, max_keywords=3, max_ngram=2) == {
        "keywords": [
            {"keyword": "Solar panels", "score": 0.048197, "rank": 1},
            {"keyword": "convert sunlight", "score": 0.060063, "rank": 2},
            {"keyword": "Solar", "score": 0.100507, "rank": 3},
        ]
    }


def test_keyword_scores_rise_from_most_to_least_relevant(run):
    found = run("keyword-extractor", text=SOLAR)["keywords"]
    scores = [k["score"] for k in found]
    assert len(scores) == 10 and scores == sorted(scores)
    assert [k["rank"] for k in found] == list(range(1, 11))


def test_keywords_limit_their_length_in_words(run):
    assert keywords(run, SOLAR, max_ngram=1, max_keywords=3) == ["Solar", "panels", "convert"]


def test_keywords_keep_whole_phrases_only(run):
    # YAKE alone: "England raised interest", "England raised", "raised interest rates",
    # "rates on Thursday", "Bank of England", "Thursday", "raised interest", "England",
    # "central bank main", "bank main tool".
    assert keywords(run, BANK) == [
        "raised interest rates",
        "Bank of England",  # a stop word inside a name is part of it
        "Thursday",
        "raised interest",
        "interest rates",
        "interest rate",
        "bank",  # as the text writes it where it stands alone: "The central bank's"
        "central bank",
        "interest",
        "raised",
    ]


@pytest.mark.parametrize(
    "text, whole, fragments",
    [
        (
            "The Industrial Revolution began in Great Britain in the eighteenth century.",
            ["Industrial Revolution", "Great Britain", "eighteenth century"],
            ["Industrial Revolution began", "Revolution began", "began in Great", "Great"],
        ),
        (
            "Ludwig van Beethoven moved to Vienna in 1792 and never left.",
            ["Ludwig van Beethoven", "Vienna"],
            ["van Beethoven moved", "van Beethoven", "Ludwig van", "Beethoven", "van"],
        ),
        (
            "The Tour de France starts in July and ends in Paris.",
            ["Tour de France", "Paris"],
            ["France starts", "July and ends", "Tour", "France"],
        ),
        (
            "The central bank's main tool is the interest rate.",
            ["interest rate", "central bank", "main tool"],
            ["central bank main", "bank main tool", "bank main"],
        ),
        (
            "Passwords are easy to steal and hard to remember.",
            ["Passwords", "remember"],
            ["Passwords are easy", "hard to remember", "easy to steal", "steal and hard"],
        ),
    ],
)
def test_no_keyword_cuts_a_name_or_crosses_a_boundary(run, text, whole, fragments):
    # YAKE alone returns every one of the fragments among its candidates.
    found = keywords(run, text, max_keywords=50)
    assert set(whole) <= set(found)
    assert not set(fragments) & set(found)


def test_names_stay_whole(run):
    text = "The Industrial Revolution began in Great Britain in the eighteenth century."
    assert keywords(run, text, max_keywords=3) == [
        "Industrial Revolution",
        "Great Britain",
        "eighteenth century",
    ]


def test_keywords_use_the_stop_words_of_the_language(run):
    text = (
        "Les panneaux solaires transforment la lumière du soleil en électricité. "
        "Les panneaux solaires coûtent moins cher."
    )
    # In French a stop word inside a phrase is allowed: "de" and "en" build noun phrases.
    assert keywords(run, text, max_keywords=2, language="fr") == [
        "panneaux solaires transforment",
        "soleil en électricité",
    ]
