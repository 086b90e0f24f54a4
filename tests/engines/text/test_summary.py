"""``summarize.*`` (engines/text/summary.py): extractive summaries, key points, statistics."""

import pytest

from catalogue import load_catalogue
from engines import EngineError

PARK = load_catalogue().get("text-summarizer").examples[0]["input"]["text"]
FIRST = "The city council approved a plan on Tuesday to turn the old rail yard into a public park."
TRAILS = (
    "Under the plan, the park will include walking trails, a community garden and a small "
    "amphitheater."
)
SITE = "The 40-acre site has been empty since the freight line closed in 2009."


@pytest.mark.parametrize(
    "algorithm, sentences",
    [
        ("textrank", [FIRST, TRAILS]),
        ("lexrank", [FIRST, SITE]),
        ("lsa", [FIRST, TRAILS]),
        ("luhn", [FIRST, TRAILS]),
    ],
)
def test_summary_picks_central_sentences_with_each_algorithm(run, algorithm, sentences):
    result = run("text-summarizer", text=PARK, sentences=2, algorithm=algorithm)
    assert result == {
        "summary": " ".join(sentences),
        "sentences": sentences,
        "source_sentences": 8,
    }


def test_summary_keeps_the_original_order_of_sentences(run):
    picked = run("text-summarizer", text=PARK, sentences=4)["sentences"]
    assert len(picked) == 4
    assert picked == sorted(picked, key=PARK.index)


STEAM = (
    "The steam engine changed Britain. It transformed the economy of Britain by moving work "
    "from farms and workshops into factories and mills. It also made railways possible, and the "
    "railways cut the cost of moving coal, iron and goods across Britain. Factories no longer "
    "had to stand beside rivers for water power. Towns grew quickly around the new factories "
    "and mills. Working hours in the factories were long and conditions were often dangerous. "
    "Reformers later pushed for laws that limited child labour in factories. By 1850 Britain "
    "produced half of the world's iron."
)
STEAM_TOPIC = "The steam engine changed Britain."
STEAM_ECONOMY = (
    "It transformed the economy of Britain by moving work from farms and workshops into "
    "factories and mills."
)


def test_summary_keeps_the_topic_sentence_and_never_opens_on_a_pronoun(run):
    # TextRank alone rates the two "It ..." sentences best and drops the short topic sentence,
    # so its summary opened "It transformed the economy ..." with nothing for "It" to name.
    result = run("text-summarizer", text=STEAM, sentences=2)
    assert result["sentences"] == [STEAM_TOPIC, STEAM_ECONOMY]


def test_key_points_keep_the_topic_sentence_too(run):
    # LexRank alone picks "It transformed ..." as the single point.
    assert run("key-points-extractor", text=STEAM, points=1)["points"] == [STEAM_TOPIC]


@pytest.mark.parametrize(
    "count, chosen",
    [
        # Sentence 4 ("They ...") leans on 3 ("It ..."), which leans on 2: 4 comes with 2.
        (3, [0, 2, 4]),
        # 4 and 2 do not both fit beside the topic sentence: the next best, 1, does.
        (2, [0, 1]),
        (1, [0]),
    ],
)
def test_a_sentence_opening_on_a_pronoun_comes_with_the_one_it_leans_on(count, chosen):
    from engines.text.summary import _choose

    leaning = [False, False, False, True, True]
    assert _choose([4, 1, 3, 0, 2], count, 0, leaning) == chosen


@pytest.mark.parametrize(
    "sentence, leans",
    [
        ("It opens a chat with an agent.", True),
        ("They can see the customer's screen.", True),
        ("“Its battery lasts a week,” she said.", True),
        ("This means no more paper receipts.", True),
        ("These are the new rules.", True),
        ("That changed in 2019.", True),
        # A demonstrative with its noun names what it points at; "IT" is a department.
        ("This report describes the outage.", False),
        ("These figures come from the survey.", False),
        ("This process takes a minute.", False),
        ("IT will disconnect the computers on Friday.", False),
        ("Items are shipped in two days.", False),
    ],
)
def test_sentences_that_lean_on_the_one_before(sentence, leans):
    from engines.text.summary import _leans

    assert _leans(sentence) is leans


def test_summary_of_a_short_text_is_the_whole_text(run):
    result = run("text-summarizer", text="One sentence only. And a second one.", sentences=5)
    assert result["sentences"] == ["One sentence only.", "And a second one."]


def test_summary_splits_sentences_around_abbreviations_and_decimals(run):
    text = "Dr. Smith arrived at 10 a.m. on Monday. He left at 3.30 p.m. the same day. Bye now."
    result = run("text-summarizer", text=text, sentences=5)
    assert result["sentences"] == [
        "Dr. Smith arrived at 10 a.m. on Monday.",
        "He left at 3.30 p.m. the same day.",
        "Bye now.",
    ]


def test_summary_of_sentences_sharing_no_word_still_picks_them(run):
    text = "Apples grow on trees. Cars need fuel. Music sounds loud. Rivers flow downhill."
    result = run("text-summarizer", text=text, sentences=2, algorithm="lexrank")
    assert result["sentences"] == ["Apples grow on trees.", "Cars need fuel."]


def test_summary_of_stop_words_only_falls_back_to_the_lead(run):
    text = "The the the. A a an. Of of of. And and to."
    result = run("text-summarizer", text=text, sentences=2, algorithm="lsa")
    assert result["sentences"] == ["The the the.", "A a an."]


def test_summary_works_in_french(run):
    text = (
        "Le conseil municipal a approuvé mardi un plan pour transformer l'ancienne gare en parc "
        "public. Le site de 16 hectares est vide depuis 2009. Le parc comprendra des sentiers, "
        "un jardin communautaire et un petit amphithéâtre. Les travaux devraient commencer au "
        "printemps prochain. Le projet coûtera environ 85 millions d'euros. Certains habitants "
        "craignent une hausse des loyers."
    )
    # Luhn counts significant words, French stop words left out: no numerical ties, whose
    # breaking (TextRank's power iteration) changes with the numpy build.
    result = run("text-summarizer", text=text, sentences=2, language="fr", algorithm="luhn")
    assert result["sentences"] == [
        "Le conseil municipal a approuvé mardi un plan pour transformer l'ancienne gare en parc "
        "public.",
        "Le parc comprendra des sentiers, un jardin communautaire et un petit amphithéâtre.",
    ]


def test_summary_refuses_text_without_sentences(run):
    with pytest.raises(EngineError, match="^The text has no sentences to summarize.$"):
        run("text-summarizer", text="... !!! ???")


def test_key_points_are_bullets_in_reading_order(run):
    result = run("key-points-extractor", text=PARK, points=2)
    assert result == {
        "points": [FIRST, SITE],
        "markdown": f"- {FIRST}\n- {SITE}",
        "source_sentences": 8,
    }


def test_statistics_measure_reading_and_speaking_time(run):
    result = run("document-statistics", text="Word. " * 476)
    assert (result["words"], result["sentences"]) == (476, 476)
    assert (result["reading_time_seconds"], result["reading_time"]) == (120, "2 min")
    assert (result["speaking_time_seconds"], result["speaking_time"]) == (191, "3 min")


def test_statistics_follow_the_reading_speeds_given(run):
    result = run(
        "document-statistics", text="Word. " * 300, words_per_minute=100,
        speaking_words_per_minute=60,
    )  # fmt: skip
    assert (result["reading_time"], result["speaking_time"]) == ("3 min", "5 min")


def test_statistics_of_a_long_document_show_hours(run):
    result = run("document-statistics", text="The quick brown fox jumps over the lazy dog. " * 2000)
    assert (result["words"], result["reading_time"], result["speaking_time"]) == (
        18000,
        "1 h 16 min",
        "2 h 00 min",
    )


def test_statistics_list_frequent_terms_without_stop_words(run):
    text = "The cat saw the dog. The dog saw a bird. The bird sang."
    result = run("document-statistics", text=text, top_terms=3)
    assert result["top_terms"] == [
        {"term": "bird", "count": 2},
        {"term": "dog", "count": 2},
        {"term": "cat", "count": 1},
    ]
    assert (result["sentences"], result["lexical_diversity"]) == (3, 0.538)


def test_statistics_quote_the_longest_sentence_up_to_300_characters(run):
    result = run("document-statistics", text="Short one. " + "word " * 400)
    assert len(result["longest_sentence"]) == 300
    assert result["longest_sentence"].endswith("word…")


def test_statistics_refuse_text_without_words(run):
    with pytest.raises(EngineError, match="^The text has no words.$"):
        run("document-statistics", text="!!! ...")


def test_lsa_summary_of_few_distinct_words_does_not_warn(run):
    text = " ".join(f"Cats nap{'.' if i % 2 else '!'}" for i in range(12))
    result = run("text-summarizer", text=text, sentences=2, algorithm="lsa")
    assert result["sentences"] == ["Cats nap!", "Cats nap."]
