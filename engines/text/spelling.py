"""British and American spelling, a job of ``text.transform``."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from engines.base import load_once
from engines.text._helpers import load_data

# Base pairs (British, American), which ``_spelling_pairs`` extends with each family's
# inflections. ``ONE_WAY`` pairs are only converted British -> American, because the American
# form is also a different British word (tire/tyre, check/cheque, program for software).
_OUR = load_data("spelling_our.txt")
_OUR_EXTRA = load_data("spelling_our_extra.json")
_ISE = load_data("spelling_ise.txt")
_YSE = load_data("spelling_yse.txt")
_RE = load_data("spelling_re.txt")
_LL = load_data("spelling_ll.json")
_OTHER = load_data("spelling_other.json")
ONE_WAY = frozenset(load_data("spelling_one_way.txt"))


def _spelling_pairs() -> tuple[dict[str, str], frozenset[str]]:
    """Every British -> American pair, and the British forms whose pair is -ise/-ize only."""
    pairs: dict[str, str] = {}
    for word in _OUR:
        stem_gb, stem_us = word, word.replace("our", "or")
        for suffix in ("", "s", "ed", "ing", "er", "ers", "ful", "less", "able"):
            pairs[stem_gb + suffix] = stem_us + suffix
    pairs.update(_OUR_EXTRA)
    ize_only: set[str] = set()
    for word in _ISE:
        stem = word[:-3]
        for suffix_gb, suffix_us in (
            ("ise", "ize"), ("ised", "ized"), ("ises", "izes"), ("ising", "izing"),
            ("isation", "ization"), ("isations", "izations"), ("iser", "izer"),
            ("isers", "izers"),
        ):  # fmt: skip
            pairs[stem + suffix_gb] = stem + suffix_us
            ize_only.add(stem + suffix_gb)
    for word in _YSE:
        stem = word[:-3]
        for suffix_gb, suffix_us in (("yse", "yze"), ("ysed", "yzed"), ("yses", "yzes"),
                                     ("ysing", "yzing"), ("yser", "yzer")):  # fmt: skip
            pairs[stem + suffix_gb] = stem + suffix_us
    for word in _RE:
        stem = word[:-2]
        pairs[word] = stem + "er"
        pairs[word + "s"] = stem + "ers"
    pairs.update(_LL)
    pairs.update(_OTHER)
    pairs = {gb: us for gb, us in pairs.items() if gb != us}
    return pairs, frozenset(ize_only)


BRITISH_TO_AMERICAN, IZE_ONLY = _spelling_pairs()


def _match_case(original: str, replacement: str) -> str:
    if original.isupper() and len(original) > 1:
        return replacement.upper()
    if original[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


@load_once
def _spelling_table(direction: str, keep_ize: bool) -> dict[str, str]:
    if direction == "to_american":
        return dict(BRITISH_TO_AMERICAN)
    return {
        us: gb
        for gb, us in BRITISH_TO_AMERICAN.items()
        if gb not in ONE_WAY and not (keep_ize and gb in IZE_ONLY)
    }


def _spelling(inputs: dict[str, Any]) -> dict[str, Any]:
    table = _spelling_table(inputs["direction"], inputs["keep_ize"])
    changes: Counter[tuple[str, str]] = Counter()

    def convert(found: re.Match[str]) -> str:
        word = found.group()
        target = table.get(word.lower())
        if target is None:
            return word
        converted = _match_case(word, target)
        changes[(word.lower(), target)] += 1
        return converted

    text = re.sub(r"[A-Za-z]+", convert, inputs["text"])
    return {
        "text": text,
        "changed_words": sum(changes.values()),
        "changes": [
            {"from": old, "to": new, "count": count}
            for (old, new), count in sorted(changes.items(), key=lambda item: item[0])
        ],
    }
