"""``text.counts`` (engines/text/counts.py), run through its catalogue tool."""


def test_word_counter_counts_everything(run):
    assert run("word-counter", text="Hello world. This is a test!\n\nSecond paragraph here.") == {
        "characters": 52,
        "characters_no_spaces": 43,
        "words": 9,
        "unique_words": 9,
        "sentences": 3,
        "paragraphs": 2,
        "lines": 3,
        "average_word_length": 4.44,
        "average_sentence_words": 3.0,
    }


def test_word_counter_counts_numbers_and_contractions_as_words(run):
    result = run("word-counter", text="It's 3.5 km, isn't it? It is.")
    assert (result["words"], result["unique_words"], result["sentences"]) == (7, 6, 2)


def test_word_counter_of_blank_text_is_zero(run):
    result = run("word-counter", text="   ")
    assert (result["words"], result["sentences"], result["average_word_length"]) == (0, 0, 0)
