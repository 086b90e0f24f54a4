"""``text.sentiment`` (engines/text/sentiment.py), run through its catalogue tool."""

import pytest


@pytest.mark.parametrize(
    "text, label, compound",
    [
        ("I love this phone!", "positive", 0.6696),
        ("This is the worst service ever.", "negative", -0.6249),
        ("The box is blue.", "neutral", 0.0),
    ],
)
def test_sentiment_labels_text_by_compound_score(run, text, label, compound):
    result = run("sentiment-analyzer", text=text)
    assert (result["label"], result["compound"]) == (label, compound)


def test_sentiment_shares_add_up_to_one(run):
    result = run("sentiment-analyzer", text="I love this phone!")
    assert (result["positive"], result["negative"], result["neutral"]) == (0.6, 0.0, 0.4)


def test_sentiment_rates_each_sentence_by_default(run):
    assert run("sentiment-analyzer", text="Great food. Awful music. We left at nine.")[
        "sentences"
    ] == [
        {"text": "Great food.", "compound": 0.6249, "label": "positive"},
        {"text": "Awful music.", "compound": -0.4588, "label": "negative"},
        {"text": "We left at nine.", "compound": 0.0, "label": "neutral"},
    ]


def test_sentiment_leaves_the_sentences_out_when_asked(run):
    text = "Great food. Awful music."
    result = run("sentiment-analyzer", text=text, by_sentence=False)
    assert result == {**run("sentiment-analyzer", text=text), "sentences": []}


@pytest.mark.parametrize(
    "text",
    [
        # What follows "but", "yet" or "however" outweighs what precedes it.
        "The screen is gorgeous and the speakers are great, but the battery dies before lunch.",
        "The staff were kind, yet the room was dirty.",
        "The views were stunning; however, the room was dirty.",
        # The main clause outweighs the "although" or "despite" one, wherever it stands.
        "Although the hotel is beautiful and the views are stunning, the room was dirty.",
        "The room was dirty, although the views were stunning and the pool was lovely.",
        "The room was dirty despite the stunning views and the lovely pool.",
    ],
)
def test_sentiment_weighs_the_clause_a_contrast_stresses(run, text):
    # VADER on the whole text calls each of these positive (the last one negative, weakly).
    result = run("sentiment-analyzer", text=text)
    assert result["label"] == "negative" and result["compound"] < -0.1


def test_a_text_with_clearly_positive_and_negative_parts_is_mixed(run):
    text = "I absolutely love this product, but the delivery was painfully slow."
    result = run("sentiment-analyzer", text=text)
    assert result["label"] == "negative" and result["mixed"] is True
    [sentence] = result["sentences"]
    assert [(clause["text"], clause["label"]) for clause in sentence["clauses"]] == [
        ("I absolutely love this product", "positive"),
        ("the delivery was painfully slow.", "negative"),
    ]
    plain = run("sentiment-analyzer", text="Great food. Lovely music. We left at nine.")
    assert plain["mixed"] is False
    assert all("clauses" not in sentence for sentence in plain["sentences"])
    # One clearly felt sentence and a mild one the other way is not mixed.
    assert run("sentiment-analyzer", text="Awful service. The fries were okay.")["mixed"] is False


def test_a_contrast_gives_a_flat_clause_the_other_polarity(run):
    # VADER knows no word of "the lid came off on day two"; the "but" says it disagrees.
    assert (
        run("sentiment-analyzer", text="Nice box, but the lid came off on day two.")["label"]
        == "negative"
    )


@pytest.mark.parametrize(
    "text, label",
    [
        ("Nothing but praise for the friendly staff.", "positive"),
        ("The delivery is not here yet, and I am still waiting.", "neutral"),
        ("I didn't like the color, but also hated the fit.", "negative"),
    ],
)
def test_words_that_only_look_like_contrast_split_nothing(run, text, label):
    assert run("sentiment-analyzer", text=text)["label"] == label


def test_a_later_sentence_opening_on_a_contrast_outweighs_the_earlier_ones(run):
    result = run("sentiment-analyzer", text="The food was good. However, the waiter was rude.")
    assert result["label"] == "negative"
    assert [sentence["label"] for sentence in result["sentences"]] == ["positive", "negative"]


def test_the_closing_verdict_outweighs_the_sentences_before_it(run):
    # VADER on the whole text: 0.0258, positive.
    text = "Friendly staff and a cozy room. The food was bland. Terrible."
    assert run("sentiment-analyzer", text=text)["label"] == "negative"


@pytest.mark.parametrize(
    "text, label",
    [
        # The negation reaches past VADER's three words, to the end of its clause...
        ("The team did not once give me a helpful answer.", "negative"),
        # ...but not across a punctuation mark or a conjunction.
        ("Never again, a terrible evening.", "negative"),
        ("The chair is not comfortable at all and my back hurts.", "negative"),
        ("I can't complain, the staff were lovely.", "positive"),
    ],
)
def test_negation_scopes_over_its_clause(run, text, label):
    assert run("sentiment-analyzer", text=text)["label"] == label


@pytest.mark.parametrize(
    "text, label",
    [
        # A negated "can" or "will" before a comparative, or a negated "can" with "enough",
        # denies that anything could be better: praise, not a negation.
        ("I could not be happier with how the repair turned out.", "positive"),
        ("You won't find a friendlier customer service team anywhere.", "positive"),
        ("I can't recommend it highly enough.", "positive"),
        ("The battery life could not be worse.", "negative"),
        # Other negations of a comparative, or of "enough", still negate.
        ("The new version is no better than the old one.", "negative"),
        ("It won't get better.", "negative"),
        ("The room wasn't good enough.", "negative"),
        ("I can't recommend this hotel.", "negative"),
        # "Not bad at all" is praise, and "at all" ends its negation's scope...
        ("not bad at all", "positive"),
        ("Not bad at all for a free app.", "positive"),
        # ...but not right after the negation; a degree "so" does not end it either.
        ("The staff were not at all helpful.", "negative"),
        ("The food isn't so good.", "negative"),
        ("The battery is not good.", "negative"),
    ],
)
def test_a_negation_that_denies_a_higher_degree_intensifies(run, text, label):
    assert run("sentiment-analyzer", text=text)["label"] == label


@pytest.mark.parametrize(
    "text, label",
    [
        # "Yet" and a "though" after a comma stress what follows, as "but" does...
        ("Delivery was slow, yet the quality blew me away and I would order again.", "positive"),
        (
            "The screen is lovely, though the speakers crackle and the battery died twice.",
            "negative",
        ),
        # ...and so does a word of regret opening a clause, which keeps its own feeling.
        (
            "Great packaging, shame the product inside was broken and support never replied.",
            "negative",
        ),
        ("The pool is lovely, too bad it was closed all week.", "negative"),
        ("The staff were friendly, sadly the room smelled of smoke.", "negative"),
        # The counterparts: "but" as before, and a plain text.
        ("Fast delivery, but the item was broken.", "negative"),
        ("The staff were kind and the room was spotless.", "positive"),
    ],
)
def test_yet_though_and_words_of_regret_stress_the_clause_they_open(run, text, label):
    assert run("sentiment-analyzer", text=text)["label"] == label


def test_words_of_regret_stay_in_the_clause_they_stress(run):
    [sentence] = run("sentiment-analyzer", text="The hotel was great, shame about the weather.")[
        "sentences"
    ]
    assert [clause["text"] for clause in sentence["clauses"]] == [
        "The hotel was great",
        "shame about the weather.",
    ]


def test_a_sentence_closing_on_though_answers_the_ones_before(run):
    # As one opening on "However" does, and without a conceding clause of its own.
    result = run("sentiment-analyzer", text="Lovely rooms. The breakfast was disappointing though.")
    however = run(
        "sentiment-analyzer", text="Lovely rooms. However, the breakfast was disappointing."
    )
    assert result["label"] == "negative" and result["compound"] == however["compound"]
    assert "clauses" not in result["sentences"][1]


@pytest.mark.parametrize(
    "text, label",
    [
        ("Opening an account was a piece of cake.", "positive"),
        ("The course is a total rip-off.", "negative"),
        # A negation applies to an idiom as to the word it means.
        ("The sequel did not blow me away.", "negative"),
    ],
)
def test_idioms_read_as_the_word_they_mean(run, text, label):
    assert run("sentiment-analyzer", text=text)["label"] == label


def test_regular_inflections_carry_their_words_score(run):
    # VADER's lexicon has "crash" but not "crashes".
    assert run("sentiment-analyzer", text="The app crashes.")["label"] == "negative"


def test_text_without_words_is_rated_whole(run):
    assert run("sentiment-analyzer", text="😍")["compound"] == 0.4588
