"""The local engines' quality on labelled samples: one module per engine family, each with a
``measure()`` that scores the product's engine and a plain baseline on the same samples.
``bench/quality.py`` runs them and prints the table. The samples are in ``data/`` (their
sources in ``data/SOURCES.md``) or made on the spot (pages, speech); nothing is downloaded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"


@dataclass
class Figure:
    """One measured figure: the product's engine beside the baseline on the same samples."""

    family: str  # "sentiment"
    metric: str  # "accuracy"
    engine: float  # the product's engine, as a tool runs it
    baseline: float | None  # a plain method on the same samples (None: no baseline)
    baseline_name: str  # what the baseline is, in a few words
    samples: int
    higher_is_better: bool = True
    unit: str = ""  # "" for a ratio in [0, 1], else "s", "ms", ...
    detail: str = ""  # a short note (a subset's figure, a time, what was skipped)


def samples(name: str) -> list[dict[str, Any]]:
    """The JSON Lines file ``data/<name>.jsonl``, one dict per line."""
    with (DATA / f"{name}.jsonl").open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def edit_distance(reference: Sequence[Any], hypothesis: Sequence[Any]) -> int:
    """Levenshtein distance: the fewest insertions, deletions and substitutions that turn
    ``hypothesis`` into ``reference`` (the characters of two strings, or two lists of words)."""
    if len(reference) < len(hypothesis):
        reference, hypothesis = hypothesis, reference  # the shorter one is the row
    previous = list(range(len(hypothesis) + 1))
    for row, item in enumerate(reference, start=1):
        current = [row]
        for column, other in enumerate(hypothesis, start=1):
            current.append(
                min(previous[column] + 1, current[-1] + 1, previous[column - 1] + (item != other))
            )
        previous = current
    return previous[-1]


def error_rate(pairs: Iterable[tuple[Sequence[Any], Sequence[Any]]]) -> float:
    """Edits over reference length, pooled over (reference, hypothesis) pairs: the character
    error rate of strings, the word error rate of word lists. Above 1 when the hypotheses
    hold more extra items than the references hold items."""
    edits = length = 0
    for reference, hypothesis in pairs:
        edits += edit_distance(reference, hypothesis)
        length += len(reference)
    return edits / length if length else 0.0


def run_engine(slug: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """What the catalogue tool ``slug`` answers for ``inputs`` (its defaults filled in), run
    by its engine as a run does."""
    from catalogue import load_catalogue
    from engines import run_tool

    tool = load_catalogue().get(slug)
    if tool is None:
        raise KeyError(f"no tool {slug}")
    return run_tool(tool, tool.with_defaults(inputs))
