"""SEO engines: keywords, title and description checks, slugs, keyword density, headings."""

import pytest

from engines import EngineError

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


def test_title_checker_flags_a_short_title_without_the_keyword(run):
    result = run("title-tag-checker", title="Shoes", keyword="boots")
    assert result["issues"] == [
        "Title is 5 characters; aim for 30-60.",
        'Title does not contain the keyword "boots".',
    ]
    assert (result["characters"], result["pixel_width"], result["ok"]) == (5, 57, False)
    assert (result["keyword_found"], result["keyword_position"]) == (False, None)


def test_title_checker_truncates_the_preview_at_the_pixel_limit(run):
    result = run("title-tag-checker", title="CHEAP RUNNING SHOES FOR EVERY RUNNER ON SALE NOW")
    assert result["preview"] == "CHEAP RUNNING SHOES FOR EVERY RUNNER ON SALE ..."
    assert result["issues"] == [
        "Title is about 602 px wide; Google truncates it after about 580 px.",
        "Title is all in capitals; searchers read that as shouting.",
    ]
    assert result["keyword_found"] is None


def test_title_checker_accepts_a_good_title(run):
    result = run(
        "title-tag-checker", title="Running Shoes Tested by Marathon Runners", keyword="SHOES"
    )
    assert (result["ok"], result["issues"], result["keyword_position"]) == (True, [], 8)


def test_meta_description_checker_uses_description_limits(run):
    result = run("meta-description-checker", description="Too short.")
    assert result["recommended_characters"] == {"min": 70, "max": 160}
    assert result["max_pixel_width"] == 920
    assert result["issues"] == ["Description is 10 characters; aim for 70-160."]


@pytest.mark.parametrize(
    "inputs, slug",
    [
        ({"text": "Crème Brûlée: 5 Easy Steps!"}, "creme-brulee-5-easy-steps"),
        ({"text": "Straße & Smørrebrød"}, "strasse-smorrebrod"),
        ({"text": "How to Build a Personal Knowledge Management System", "max_length": 30},
         "build-personal-knowledge"),
        ({"text": "Über den Wolken", "separator": "_"}, "uber_den_wolken"),
        ({"text": "The Art of War", "remove_stop_words": False}, "the-art-of-war"),
        ({"text": "The And"}, "the-and"),
        ({"text": "Don't Panic"}, "dont-panic"),
    ],
    ids=["accents", "special-letters", "max-length", "separator", "keep-stop-words",
         "only-stop-words", "apostrophe"],
)  # fmt: skip
def test_slug_generator_makes_readable_ascii_slugs(run, inputs, slug):
    result = run("url-slug-generator", **inputs)
    assert (result["slug"], result["length"]) == (slug, len(slug))


def test_slug_generator_reports_the_words_it_removed(run):
    result = run("url-slug-generator", text="The Art of War")
    assert result == {"slug": "art-war", "length": 7, "removed_words": ["the", "of"]}


def test_slug_generator_refuses_text_without_letters_or_digits(run):
    with pytest.raises(EngineError, match="no letters or digits"):
        run("url-slug-generator", text="!!! ???")


COFFEE = (
    "Cold brew coffee is smooth and sweet. To make cold brew, steep coarse coffee in cold "
    "water for 16 hours. Cold brew keeps for two weeks in the fridge, so a big batch of coffee "
    "lasts."
)


def test_keyword_density_counts_two_word_phrases(run):
    result = run("keyword-density-analyzer", text=COFFEE, ngram=2, top=2)
    assert result == {
        "total_words": 36,
        "unique_phrases": 10,
        "phrases": [
            {"phrase": "cold brew", "count": 3, "density": 16.67},
            {"phrase": "16 hours", "count": 1, "density": 5.56},
        ],
    }


def test_keyword_density_can_keep_stop_words(run):
    result = run("keyword-density-analyzer", text=COFFEE, exclude_stop_words=False, top=1)
    assert result["phrases"] == [{"phrase": "cold", "count": 4, "density": 11.11}]
    assert result["unique_phrases"] == 26


def test_keyword_density_phrases_do_not_cross_sentences(run):
    result = run("keyword-density-analyzer", text="Good coffee. Coffee beans.", ngram=2)
    assert [p["phrase"] for p in result["phrases"]] == ["coffee beans", "good coffee"]


def test_headings_of_html_are_outlined_with_issues(run):
    result = run(
        "heading-structure-checker", document="<h2>Intro</h2><p>x</p><h3></h3><h2>Intro</h2>"
    )
    assert result == {
        "format": "html",
        "headings": [
            {"level": 2, "text": "Intro"},
            {"level": 3, "text": ""},
            {"level": 2, "text": "Intro"},
        ],
        "outline": "  H2 Intro\n    H3\n  H2 Intro",
        "ok": False,
        "issues": [
            "There is no H1 heading; give the page exactly one.",
            "An H3 heading is empty.",
            'H2 "Intro" appears more than once.',
        ],
    }


def test_headings_of_markdown_include_setext_and_skip_code(run):
    document = "Title\n=====\n\n```\n# not a heading\n```\n\nSection\n-------\n\n### **Deep** dive"
    result = run("heading-structure-checker", document=document)
    assert result["headings"] == [
        {"level": 1, "text": "Title"},
        {"level": 2, "text": "Section"},
        {"level": 3, "text": "Deep dive"},
    ]
    assert (result["format"], result["ok"], result["issues"]) == ("markdown", True, [])


def test_headings_flag_two_h1_and_an_overlong_h1(run):
    long_title = "A " + "very " * 15 + "long title"
    result = run("heading-structure-checker", document=f"# {long_title}\n\n# Second")
    assert result["issues"] == [
        "There are 2 H1 headings; give the page exactly one.",
        f'H1 "{long_title}" is {len(long_title)} characters; keep the H1 under 70.',
    ]


def test_headings_report_a_document_without_headings(run):
    result = run("heading-structure-checker", document="Just a paragraph.", format="markdown")
    assert (result["headings"], result["issues"]) == ([], ["The document has no headings."])
