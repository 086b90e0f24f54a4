"""Catalogue.search: the site's tool search (and the API's, should it take a query)."""

import pytest

from catalogue import load_catalogue
from catalogue.tool import MAX_QUERY_CHARS, MAX_QUERY_WORDS, query_words


@pytest.fixture(scope="module")
def catalogue():
    return load_catalogue()


def test_without_words_it_is_filter(catalogue):
    assert catalogue.search() == list(catalogue)
    assert catalogue.search("   ", category="seo") == catalogue.filter(category="seo")
    assert catalogue.search(None, plan="pro") == catalogue.filter(plan="pro")


def test_every_word_must_be_in_the_name_summary_or_slug(catalogue):
    found = catalogue.search("IMAGE resize")
    assert found and found[0].slug == "image-resizer"
    for tool in found:
        text = f"{tool.name} {tool.slug} {tool.summary}".lower()
        assert "image" in text and "resize" in text
    assert catalogue.search("word-counter") == [catalogue.get("word-counter")]


def test_name_matches_come_first(catalogue):
    found = catalogue.search("counter")
    in_name = [tool for tool in found if "counter" in tool.name.lower()]
    assert found[: len(in_name)] == in_name


def test_filters_apply_and_unknown_ones_raise(catalogue):
    assert all(t.category == "seo" for t in catalogue.search("title", category="seo"))
    assert all(t.required_plan == "pro" for t in catalogue.search("image", plan="pro"))
    with pytest.raises(ValueError):
        catalogue.search("x", category="nope")
    with pytest.raises(ValueError):
        catalogue.search("x", plan="nope")


def test_any_text_is_read_within_bounds(catalogue):
    assert catalogue.search("zzqxv") == []
    assert catalogue.search("\x00\uffff" * 10_000) == []
    words = query_words(" ".join(f"w{n}" for n in range(100)))
    assert len(words) == MAX_QUERY_WORDS
    assert len("".join(query_words("a" * 10_000))) == MAX_QUERY_CHARS
    assert query_words("Word  word\tWORD counter") == ["word", "counter"]
