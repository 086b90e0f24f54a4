"""The site assistant finds the right tool: the golden set of questions written as visitors
ask them (tests/services/assistant_golden.yaml), on the embedded default's catalogue."""

from pathlib import Path

import yaml

from services.assistant import current_index

GOLDEN = Path(__file__).with_name("assistant_golden.yaml")


def golden() -> list[dict]:
    return yaml.safe_load(GOLDEN.read_text(encoding="utf-8"))


def test_the_golden_set_has_at_least_80_questions_naming_real_tools(app):
    questions = golden()
    assert len(questions) >= 80
    known = {t.slug for t in app.extensions["catalogue"]} | {
        w.id for w in app.extensions["workflows"]
    }
    assert [q["q"] for q in questions if not set(q["tools"]) <= known] == []
    assert "which tool turns a podcast into show notes?" in {q["q"] for q in questions}


def test_recall_at_5_and_the_right_tool_first(app):
    index = current_index()
    first = within_five = 0
    misses = []
    for question in golden():
        found = [hit.document.id.split(":", 1)[1] for hit in index.search(question["q"]).hits]
        first += found[0] in question["tools"]
        hit = any(slug in question["tools"] for slug in found[:5])
        within_five += hit
        if not hit:
            misses.append((question["q"], found[:5]))
    total = len(golden())
    assert within_five / total >= 0.9, misses
    assert first / total >= 0.7
