"""bench/quality/facts.py: its labelled answers are checked as their tools check them."""

from bench.quality import facts, samples
from catalogue import load_catalogue


def test_every_labelled_answer_is_of_a_tool_that_keeps_its_inputs_facts():
    catalogue = load_catalogue()
    items = samples("facts")
    assert {item["source"] for item in items} == {"embedded model", "written", "issue report"}
    for item in items:
        assert "facts" in catalogue.get(item["tool"]).params["checks"], item["tool"]
        assert isinstance(item["invents"], bool) and item["note"] is not None


def test_the_figures_count_what_the_check_refuses():
    figures = {figure.metric: figure for figure in facts.measure()}
    shown = figures["answers naming an invented fact, per 100"]
    # Before the check every inventing answer is shown; after it, fewer (and never more).
    assert 0 <= shown.engine < shown.baseline <= 100
    assert figures["faithful answers refused"].engine <= 0.1
