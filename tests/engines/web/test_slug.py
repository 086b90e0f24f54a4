"""``seo.slug`` (engines/web/slug.py), run through its catalogue tools."""

import pytest

from engines import EngineError


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
