"""``text.find`` (engines/text/find.py), run through its catalogue tools."""


def test_passive_voice_finder_marks_agents(run):
    out = run("passive-voice-finder", text="The cake was eaten by the dog. We baked bread.")
    assert out["matches"] == [{"text": "was eaten", "start": 9, "end": 18, "with_agent": True}]
    assert (out["sentences"], out["passive_sentences"], out["passive_percent"]) == (2, 1, 50.0)


def test_passive_voice_finder_ignores_ed_words_that_are_not_participles(run):
    out = run("passive-voice-finder", text="We are indeed a hundred strong. It is red.")
    assert out["matches"] == []


def test_adverb_finder_skips_look_alikes_and_names(run):
    out = run("adverb-finder", text="My family gladly met early. Then Ms Kelly left quickly.")
    assert [m["text"] for m in out["matches"]] == ["gladly", "quickly"]


def test_filler_finder_reports_each_span_once_under_the_chosen_categories(run):
    text = "Basically, I think it is really good."
    hedges = run("filler-word-finder", text=text, categories=["hedge"])
    assert [(m["text"], m["category"]) for m in hedges["matches"]] == [("I think", "hedge")]
    everything = run("filler-word-finder", text=text)
    assert everything["by_category"] == {"filler": 2, "hedge": 1, "weasel": 0}


def test_cliche_finder_matches_whole_phrases_with_curly_apostrophes(run):
    out = run("cliche-finder", text="It’s not rocket science. Rocket sciences are hard.")
    assert out["matches"] == [{"text": "It’s not rocket science", "start": 0, "end": 23}]


def test_redundant_phrases_are_replaced_keeping_the_capital(run):
    out = run("redundant-phrase-finder", text="Each and every guest got a free gift.")
    assert out["revised_text"] == "Each guest got a gift."
    assert [m["suggestion"] for m in out["matches"]] == ["Each", "gift"]


def test_inclusive_checker_filters_by_category(run):
    text = "The chairman kept a blacklist."
    out = run("inclusive-language-checker", text=text, categories=["technology"])
    assert out["count"] == 1
    assert out["matches"][0]["suggestions"] == ["blocklist", "denylist"]
    assert out["by_category"] == {"technology": 1}


def test_profanity_checker_masks_whole_words_only(run):
    out = run(
        "profanity-checker",
        text="Scunthorpe is damn nice, no shit.",
        mask_style="full",
    )
    assert out["masked_text"] == "Scunthorpe is **** nice, no ****."
    assert (out["strong"], out["mild"]) == (1, 1)
    strict = run("profanity-checker", text="damn", include_mild=False)
    assert strict["contains_profanity"] is False and strict["masked_text"] == "damn"
