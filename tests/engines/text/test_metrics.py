"""``text.metrics`` (engines/text/metrics.py), run through its catalogue tools."""


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
