"""``text.counts``: the word counter, characters, words, sentences, paragraphs and lines."""

from __future__ import annotations

from typing import Any

from engines import _text
from engines.base import Engine
from engines.text._helpers import _round


class WordCountEngine(Engine):
    name = "text.counts"

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        text = inputs["text"]
        found = _text.words(text)
        sentence_count = len(_text.quick_sentences(text))
        letters = len("".join(found))
        return {
            "characters": len(text),
            "characters_no_spaces": len("".join(text.split())),  # split() cuts at isspace()
            "words": len(found),
            "unique_words": len({w.lower() for w in found}),
            "sentences": sentence_count,
            "paragraphs": len(_text.paragraphs(text)),
            "lines": len(text.splitlines()),
            "average_word_length": _round(letters / len(found)) if found else 0,
            "average_sentence_words": _round(len(found) / sentence_count) if sentence_count else 0,
        }
