"""Spelling correction: precision and recall of the corrections on 148 English sentences
(``data/spelling.jsonl``: 149 misspellings in 121 of them; 27 hold none, but names, acronyms,
product names, URLs and e-mail addresses that must be left alone).

The product's engine is the spell checker (``spell-checker``, ``text.spelling``), whose text
is corrected by taking each flagged word's first suggestion; ``spelling.py`` beside it only
converts between British and American spelling. Baseline: pyspellchecker's ``correction()``
on every word it does not know, split on letters alone.

A correction counts when the misspelled word is replaced by exactly the right word (its
capital kept). Precision is the right corrections over all the words changed: a word that
was not misspelled, changed, is a false positive, and so is a misspelling changed to the
wrong word."""

from __future__ import annotations

import re
from typing import Any

from bench.quality import Figure, run_engine, samples

_WORD_RE = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")


def _engine_changes(text: str) -> dict[str, str]:
    """Each word the spell checker flags, mapped to its first suggestion (when it has one)."""
    issues = run_engine("spell-checker", {"text": text})["issues"]
    return {issue["word"]: issue["suggestions"][0] for issue in issues if issue["suggestions"]}


def _checker() -> Any:
    from spellchecker import SpellChecker

    return SpellChecker(language="en")


def _baseline_changes(checker: Any, text: str) -> dict[str, str]:
    changes = {}
    for word in set(_WORD_RE.findall(text)):
        if not checker.unknown([word]):
            continue
        fixed = checker.correction(word.lower())
        if fixed is None or fixed == word.lower():
            continue
        changes[word] = fixed[:1].upper() + fixed[1:] if word[:1].isupper() else fixed
    return changes


def _scores(items: list[dict], changed: list[dict[str, str]]) -> tuple[float, float, str]:
    right = wrong_fix = false_alarm = clean_touched = 0
    for item, changes in zip(items, changed, strict=True):
        gold = item["corrections"]
        right += sum(changes.get(wrong) == fix for wrong, fix in gold.items())
        wrong_fix += sum(wrong in changes and changes[wrong] != fix for wrong, fix in gold.items())
        false_alarm += sum(word not in gold for word in changes)
        clean_touched += not gold and bool(changes)
    made = right + wrong_fix + false_alarm
    misspellings = sum(len(item["corrections"]) for item in items)
    clean = sum(not item["corrections"] for item in items)
    detail = (
        f"{made} words changed: {right} right, {wrong_fix} misspellings changed to a wrong "
        f"word, {false_alarm} correct words changed; {clean_touched} of the {clean} "
        "sentences without errors changed"
    )
    return (right / made if made else 0.0), right / misspellings, detail


def measure() -> list[Figure]:
    items = samples("spelling")
    checker = _checker()
    engine = [_engine_changes(item["text"]) for item in items]
    baseline = [_baseline_changes(checker, item["text"]) for item in items]
    engine_precision, engine_recall, engine_detail = _scores(items, engine)
    baseline_precision, baseline_recall, baseline_detail = _scores(items, baseline)
    misspellings = sum(len(item["corrections"]) for item in items)
    name = "pyspellchecker correction() on unknown words"
    return [
        Figure("spelling", "precision", engine_precision, baseline_precision, name,
               len(items), detail=f"engine: {engine_detail}"),
        Figure("spelling", "recall", engine_recall, baseline_recall, name, misspellings,
               detail=f"baseline: {baseline_detail}"),
    ]  # fmt: skip
