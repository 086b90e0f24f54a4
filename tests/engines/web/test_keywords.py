"""``seo.keywords`` (engines/web/keywords.py), run through its catalogue tools."""

SOLAR = (
    "Solar panels convert sunlight into electricity. Solar panels work best on south-facing "
    "roofs. The cost of solar panels has fallen by 80 percent in ten years, so more homeowners "
    "now install solar panels. Batteries store the electricity for the night."
)


def test_keywords_rank_the_main_topic_first(run):
    assert run("keyword-extractor", text=SOLAR, max_keywords=3, max_ngram=2) == {
        "keywords": [
            {"keyword": "Solar panels", "score": 0.048197},
            {"keyword": "convert sunlight", "score": 0.060063},
            {"keyword": "Solar", "score": 0.100507},
        ]
    }


def test_keyword_scores_rise_from_most_to_least_relevant(run):
    scores = [k["score"] for k in run("keyword-extractor", text=SOLAR)["keywords"]]
    assert len(scores) == 10 and scores == sorted(scores)


def test_keywords_limit_their_length_in_words(run):
    keywords = run("keyword-extractor", text=SOLAR, max_ngram=1, max_keywords=3)["keywords"]
    assert [k["keyword"] for k in keywords] == ["Solar", "panels", "convert"]


def test_keywords_use_the_stop_words_of_the_language(run):
    text = (
        "Les panneaux solaires transforment la lumière du soleil en électricité. "
        "Les panneaux solaires coûtent moins cher."
    )
    keywords = run("keyword-extractor", text=text, max_keywords=2, language="fr")["keywords"]
    assert [k["keyword"] for k in keywords] == [
        "panneaux solaires transforment",
        "soleil en électricité",
    ]
