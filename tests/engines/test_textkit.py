"""The local text utilities of engines.textkit, run through their catalogue tools."""

import pytest

from engines import EngineError

# --- text.frequency ----------------------------------------------------------------------


def test_word_frequency_counts_folds_case_and_tracks_coverage(run):
    out = run("word-frequency-counter", text="Tea, tea and more TEA. Coffee? No coffee.", top=2)
    assert out == {
        "total_words": 8,
        "unique_words": 5,
        "hapax_legomena": 3,
        "words": [
            {"word": "tea", "count": 3, "percent": 37.5, "cumulative_percent": 37.5},
            {"word": "coffee", "count": 2, "percent": 25.0, "cumulative_percent": 62.5},
        ],
    }


def test_word_frequency_can_drop_stop_words_and_short_words(run):
    out = run(
        "word-frequency-counter",
        text="The cat and the dog and an ox",
        exclude_stop_words=True,
        min_length=3,
    )
    assert [w["word"] for w in out["words"]] == ["cat", "dog"]


def test_word_ngrams_stay_inside_clauses_unless_told_otherwise(run):
    text = "Open source. Source code is open source"
    inside = run("ngram-counter", text=text, n=2, min_count=1)
    across = run("ngram-counter", text=text, n=2, min_count=1, cross_punctuation=True)
    assert ("source source" in [g["ngram"] for g in inside["ngrams"]]) is False
    assert "source source" in [g["ngram"] for g in across["ngrams"]]
    assert inside["ngrams"][0] == {"ngram": "open source", "count": 2, "percent": 40.0}


def test_character_ngrams(run):
    out = run("ngram-counter", text="banana", unit="character", n=3, min_count=2)
    assert out["ngrams"] == [{"ngram": "ana", "count": 2, "percent": 50.0}]
    assert out["total_ngrams"] == 4


def test_ngrams_refuse_a_text_shorter_than_n(run):
    with pytest.raises(EngineError, match="too short for 5-word n-grams"):
        run("ngram-counter", text="only three words", n=5)


# --- text.metrics ------------------------------------------------------------------------


def test_lexical_diversity_of_a_short_text_leaves_length_bound_metrics_null(run):
    out = run("lexical-diversity-analyzer", text="one two two three three three")
    assert out["tokens"] == 6 and out["types"] == 3
    assert out["ttr"] == 0.5
    assert out["mattr"] is None and out["hdd"] is None
    assert out["hapax_legomena"] == 1


def test_lexical_diversity_ranks_a_repetitive_text_below_a_varied_one(run):
    varied = " ".join(a + b for a in "abcdefghij" for b in "klmnopqrstuv")
    repetitive = " ".join(["the cat sat on the mat"] * 20)
    rich = run("lexical-diversity-analyzer", text=varied)
    poor = run("lexical-diversity-analyzer", text=repetitive)
    assert rich["hdd"] == 1.0 and rich["mattr"] == 1.0
    assert poor["mtld"] < 10 and poor["hdd"] < 0.2


def test_sentence_lengths_list_long_sentences(run):
    text = "Short one. " + " ".join(["word"] * 30) + ". Another short sentence here."
    out = run("sentence-length-analyzer", text=text, long_threshold=20)
    assert out["sentences"] == 3
    assert [s["words"] for s in out["long_sentences"]] == [30]
    assert out["long_sentences"][0]["index"] == 1
    assert out["distribution"][0] == {"range": "1-9", "sentences": 2}
    assert out["distribution"][3] == {"range": "30-39", "sentences": 1}


def test_markdown_structure_flags_long_sections_and_missing_headings(run):
    body = " ".join(["text"] * 60)
    out = run(
        "markdown-structure-analyzer",
        text=f"{body}\n\n{body}",
        max_section_words=50,
        max_paragraph_words=50,
    )
    assert out["words"] == 120 and out["paragraphs"] == 2
    assert out["issues"] == [
        "2 paragraph(s) run over 50 words; split them for easier reading on screens.",
        "The document has no headings; readers scan by headings.",
    ]


def test_markdown_reading_time_adds_time_for_images(run):
    text = "# Gallery\n\n" + "\n\n".join(f"![p{i}](p{i}.png)" for i in range(3))
    out = run("markdown-structure-analyzer", text=text, words_per_minute=60)
    assert out["images"] == 3
    assert out["reading_time_seconds"] == 1 + 12 + 11 + 10


def test_social_counter_weighs_links_emoji_and_cjk_like_x(run):
    text = "Hi 👋🏽 日本 https://example.com/a/long/path"
    out = run("social-character-counter", text=text, platforms=["x_post", "bluesky_post"])
    # "Hi " 3 + emoji with skin tone 2 + " " 1 + two CJK 4 + " " 1 + link 23
    assert out["results"][0]["count"] == 34
    assert out["results"][1]["count"] == out["graphemes"] == len(text) - 1


def test_social_counter_counts_sms_segments_by_encoding(run):
    plain = run("social-character-counter", text="a" * 161, platforms=["sms"])
    assert (plain["sms_encoding"], plain["sms_segments"]) == ("GSM-7", 2)
    assert plain["results"][0] == {
        "platform": "sms",
        "name": "SMS (one segment)",
        "limit": 160,
        "count": 161,
        "remaining": -1,
        "fits": False,
    }
    unicode = run("social-character-counter", text="ü€ café ✓", platforms=["sms"])
    assert (unicode["sms_encoding"], unicode["results"][0]["limit"]) == ("UCS-2", 70)


# --- text.find ---------------------------------------------------------------------------


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


# --- text.extract ------------------------------------------------------------------------


def test_email_extractor_deduplicates_and_decodes_obfuscation(run):
    out = run("email-extractor", text="a@x.io, A@X.IO and bob (at) y (dot) com; not@home")
    assert [(e["email"], e["count"]) for e in out["emails"]] == [("a@x.io", 2), ("bob@y.com", 1)]
    kept = run("email-extractor", text="bob (at) y (dot) com", deobfuscate=False)
    assert kept["count"] == 0


def test_url_extractor_trims_punctuation_but_keeps_balanced_brackets(run):
    out = run("url-extractor", text="See (https://x.org/a_(b)), www.y.com. And http://localhost.")
    assert [u["url"] for u in out["urls"]] == ["https://x.org/a_(b)", "www.y.com"]


def test_phone_extractor_normalises_to_e164_and_skips_dates(run):
    out = run(
        "phone-number-extractor",
        text="Call (415) 555-0100 or +33 1 42 68 53 00 before 2024-05-01. Ref 123456789.",
    )
    assert [(n["number"], n["e164"]) for n in out["numbers"]] == [
        ("(415) 555-0100", "+14155550100"),
        ("+33 1 42 68 53 00", "+33142685300"),
    ]


def test_phone_extractor_cannot_place_a_national_number_without_its_trunk_prefix(run):
    out = run("phone-number-extractor", text="Ring 20 7946 0958", default_country="GB")
    assert out["numbers"][0]["e164"] is None


def test_hashtags_mentions_and_cashtags_are_grouped_case_insensitively(run):
    out = run("hashtag-mention-extractor", text="#AI #ai @Bob @bob x@y.com $tsla #2024")
    assert out == {
        "hashtags": [{"tag": "#AI", "count": 2}],
        "mentions": [{"handle": "@Bob", "count": 2}],
        "cashtags": [{"symbol": "$TSLA", "count": 1}],
    }


def test_date_extractor_reads_day_first_and_skips_impossible_dates(run):
    text = "Due 04/05/2024, not 31/02/2024; kickoff 1st of March 2024."
    out = run("date-extractor", text=text, day_first=True)
    assert [d["date"] for d in out["dates"]] == ["2024-05-04", "2024-03-01"]
    us = run("date-extractor", text="Due 04/05/2024")
    assert us["dates"][0]["date"] == "2024-04-05"


def test_acronym_finder_reads_definitions_in_both_orders(run):
    text = "Use a CDN. Content delivery network (CDN) costs vary. RUM (real user monitoring) too."
    out = run("acronym-finder", text=text)
    assert [(a["acronym"], a["status"]) for a in out["acronyms"]] == [
        ("CDN", "defined_late"),
        ("RUM", "defined"),
    ]
    assert out["acronyms"][1]["expansion"] == "real user monitoring"


# --- text.transform ----------------------------------------------------------------------


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


# --- text.compare ------------------------------------------------------------------------


def test_similarity_of_identical_texts_is_one(run):
    text = "The quick brown fox jumps over the lazy dog"
    out = run("text-similarity-checker", text=text, other_text=text.upper())
    assert (out["jaccard"], out["cosine"], out["verdict"]) == (1.0, 1.0, "near-identical")


def test_similarity_of_unrelated_texts_is_zero(run):
    out = run("text-similarity-checker", text="red green blue", other_text="one two three")
    assert (out["jaccard"], out["verdict"]) == (0.0, "distinct")


def test_similarity_needs_the_second_text(run):
    with pytest.raises(EngineError, match="other_text"):
        run("text-similarity-checker", text="hello there")


def test_duplicate_finder_ignores_case_punctuation_and_short_sentences(run):
    text = "Thanks. Thanks. We ship worldwide today. WE SHIP WORLDWIDE TODAY!"
    out = run("duplicate-sentence-finder", text=text)
    assert out["duplicate_groups"] == 1
    assert [o["start"] for o in out["duplicates"][0]["occurrences"]] == [16, 41]


@pytest.mark.parametrize(
    ("slug", "inputs"),
    [
        ("word-frequency-counter", {"text": "!!! ???"}),
        ("adverb-finder", {"text": "…"}),
        ("markdown-structure-analyzer", {"text": "```\ncode only\n```"}),
        ("duplicate-sentence-finder", {"text": "---"}),
    ],
)
def test_texts_without_words_are_refused(run, slug, inputs):
    with pytest.raises(EngineError):
        run(slug, **inputs)
