"""What every text engine shares (engines/text/_helpers.py): a text must have words."""

import pytest

from engines import EngineError


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
