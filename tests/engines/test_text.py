"""The shared text helpers of engines/_text.py."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from engines import _text

# The sentence pattern in its plain form: the specification the fast one is written from.
PLAIN_SENTENCE_RE = re.compile(r"\S.*?(?:[.!?…]+[\"'”’)\]]*(?=\s|$)|(?=\n)|$)", re.DOTALL)

# What decides where a sentence ends, and what the two patterns could read differently:
# every kind of line break and space, terminal punctuation, closers, letters and digits.
_CHARACTERS = list("ab Z1,-.!?…\"'”’)]\n\t\r\x0b\x0c\x1c\u2028\u00a0") + ["..."]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_CHARACTERS), max_size=30).map("".join))
def test_the_sentence_pattern_finds_what_the_plain_pattern_finds(text):
    found = [match.span() for match in _text._SENTENCE_RE.finditer(text)]
    assert found == [match.span() for match in PLAIN_SENTENCE_RE.finditer(text)]


def test_quick_sentences_end_at_terminal_punctuation_and_line_breaks_not_abbreviations():
    text = 'He said "Go!" and left. Dr. Who?! Version 3.5 is out…\nNo stop here\n\nLast one'
    assert _text.quick_sentences(text) == [
        'He said "Go!"',  # quick: a closing quote after "!" ends the sentence
        "and left.",
        "Dr. Who?!",
        "Version 3.5 is out…",
        "No stop here",
        "Last one",
    ]
