"""``text.spelling``: the spell checker, misspelled words with suggestions (pyspellchecker).

Not to be confused with ``spelling``, which converts between British and American spelling.
"""

from __future__ import annotations

import re
from typing import Any

from engines.base import Engine, load_once

# Words made of letters with inner apostrophes; hyphenated words are checked part by part.
_SPELL_WORD_RE = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
# Spans never spell-checked: URLs, e-mail addresses, @handles, #hashtags, inline code.
_SKIP_SPAN_RE = re.compile(r"https?://\S+|www\.\S+|\S+@\S+\.\w+|[@#]\w+|`[^`\n]*`")


@load_once
def _spell_checker(language: str) -> Any:
    from spellchecker import SpellChecker

    return SpellChecker(language=language)


def _should_check(word: str) -> bool:
    if len(word) < 2:
        return False
    # Acronyms (NASA) and mixed-case names (iPhone, McDonald) are not dictionary words.
    return not (word.isupper() or any(c.isupper() for c in word[1:]))


class SpellingEngine(Engine):
    name = "text.spelling"
    requires = ("spellchecker",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        text = inputs["text"]
        checker = _spell_checker(inputs["language"])
        skipped = [m.span() for m in _SKIP_SPAN_RE.finditer(text)]
        tokens = []
        next_skip = 0  # both lists run in text order: walk them together
        for match in _SPELL_WORD_RE.finditer(text):
            start = match.start()
            while next_skip < len(skipped) and skipped[next_skip][1] <= start:
                next_skip += 1
            if next_skip < len(skipped) and skipped[next_skip][0] <= start:
                continue
            if _should_check(match.group()):
                tokens.append((match.group(), start))
        lookup = {word: word.replace("’", "'").lower() for word, _ in tokens}
        unknown = checker.unknown(lookup.values())
        suggestions: dict[str, list[str]] = {}
        issues = []
        for word, offset in tokens:
            key = lookup[word]
            if key not in unknown:
                continue
            if key not in suggestions:
                suggestions[key] = self._suggest(checker, key, inputs["max_suggestions"])
            found = suggestions[key]
            if word[0].isupper():  # "Teh" -> "The", German nouns keep their capital
                found = [s[:1].upper() + s[1:] for s in found]
            issues.append({"word": word, "offset": offset, "suggestions": found})
        return {"words_checked": len(tokens), "misspelled": len(issues), "issues": issues}

    @staticmethod
    def _suggest(checker: Any, word: str, limit: int) -> list[str]:
        # Only candidates one edit away: pyspellchecker's two-edit search takes 0.2-2 s per
        # unknown word, too slow for an inline tool, and most misspellings are one edit.
        if limit == 0:
            return []
        candidates = checker.known(checker.edit_distance_1(word))
        ranked = sorted(candidates, key=lambda c: (-checker.word_usage_frequency(c), c))
        return ranked[:limit]
