"""Facts: how many answers of the embedded model name a fact their input does not hold
(a place, person, organisation, date or number), before and after the ``facts`` check of
the tools that must keep their input's facts (``engines/models/checks.py``), and what that
check costs: the faithful answers it refuses.

Samples (``data/facts.jsonl``): answers of fact-keeping tools (rewriters, simplifiers,
notes-to-prose, summarizers, reply writers), each labelled by hand ``invents`` (it names a
fact no input holds) or not; most are the embedded model's own first answers to inputs
written for the repository, some written to the shapes the check must tell apart
(``source``). Each answer is checked with its tool's declared ``facts`` check, as a run
checks the embedded model's answer. "Before": every answer is shown. "After": the answers
the check refuses are not (a run asks once more, then answers 503 embedded_model_unfit).
"""

from __future__ import annotations

from bench.quality import Figure, samples


def measure() -> list[Figure]:
    from catalogue import load_catalogue
    from engines.models import checks

    items = samples("facts")
    catalogue = load_catalogue()
    refused = []
    for item in items:
        declared = catalogue.get(item["tool"]).params.get("checks", {})
        facts = {"facts": declared["facts"]} if "facts" in declared else {}
        output = item["output"]
        refused.append(bool(checks.problems(output, item["input"], facts)))
    model = [i for i, item in enumerate(items) if item["source"] == "embedded model"]
    faithful = [i for i, item in enumerate(items) if not item["invents"]]
    return [
        _invented("answers naming an invented fact, per 100", items, refused, range(len(items))),
        _invented("the embedded model's answers, per 100", items, refused, model),
        Figure("facts", "faithful answers refused", sum(refused[i] for i in faithful)
               / len(faithful), 0.0, "every answer shown", len(faithful), higher_is_better=False),
        Figure("facts", "answers refused (all)", sum(refused) / len(items), 0.0,
               "every answer shown", len(items), higher_is_better=False),
    ]  # fmt: skip


def _invented(metric: str, items: list[dict], refused: list[bool], subset) -> Figure:
    """Per 100 answers of ``subset``, those naming an invented fact that are shown: after the
    check (the engine's figure) and with every answer shown (the baseline)."""
    subset = list(subset)
    inventing = [i for i in subset if items[i]["invents"]]
    shown = sum(not refused[i] for i in inventing)
    return Figure("facts", metric, 100 * shown / len(subset), 100 * len(inventing) / len(subset),
                  "every answer shown", len(subset), higher_is_better=False, unit=" %",
                  detail=f"{len(inventing) - shown} of {len(inventing)} refused")  # fmt: skip
