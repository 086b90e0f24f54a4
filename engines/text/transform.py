"""``text.transform``: one engine for spelling, case, typography, whitespace, HTML, numbers."""

from __future__ import annotations

from engines.base import ChoiceEngine
from engines.text.case import _sentence_case, _title_case
from engines.text.html_text import _html_text
from engines.text.number_words import _number_words
from engines.text.spelling import _spelling
from engines.text.typography import _typography
from engines.text.whitespace import _lines, _whitespace


class TransformEngine(ChoiceEngine):
    name = "text.transform"
    jobs = {
        "spelling": _spelling,
        "title_case": _title_case,
        "sentence_case": _sentence_case,
        "typography": _typography,
        "whitespace": _whitespace,
        "lines": _lines,
        "html_text": _html_text,
        "number_words": _number_words,
    }
