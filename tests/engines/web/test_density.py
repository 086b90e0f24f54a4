"""``seo.density`` (engines/web/density.py), run through its catalogue tools."""

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
