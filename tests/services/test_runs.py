"""services.runs: what holds while a run's engine works, and the note a result carries."""

import pytest

from engines.models import local_llm
from extensions import db
from services import runs
from tests.helpers import auth


def test_no_transaction_stays_open_while_the_engine_works(app, client, make_key, monkeypatch):
    seen = []
    real = runs.run_tool

    def watched(tool, inputs):
        seen.append(db.session().in_transaction())
        return real(tool, inputs)

    monkeypatch.setattr(runs, "run_tool", watched)
    raw = make_key("pro")
    body = {"slug": "word-counter", "input": "one two three"}
    assert client.post("/v1/tools/run", headers=auth(raw), json=body).status_code == 200
    queued = client.post(
        "/v1/tools/run", headers={**auth(raw), "Prefer": "respond-async"}, json=body
    ).get_json()
    with app.app_context():
        ended = runs.execute(queued["run_id"])
        db.session.commit()
        assert ended is not None and ended.status == "succeeded"
    assert seen == [False, False]


@pytest.mark.parametrize("model", [None, "", "gpt-4o-mini", "gpt-4o-mini, whisper-1"])
def test_a_result_no_embedded_model_wrote_carries_no_note(model):
    assert runs.quality_note(model) is None


def test_a_result_the_embedded_model_wrote_says_so_in_plain_words():
    embedded = local_llm.model_name()

    note = runs.quality_note(embedded)

    assert note == runs.EMBEDDED_MODEL_NOTE.format(model=embedded)
    assert f"small model built into this service ({embedded}), not by an AI provider" in note
    # Some of it: a provider answered first, then the embedded model (or the other way).
    assert runs.quality_note(f"gpt-4o-mini, {embedded}") == note
    assert runs.quality_note(f"{embedded}, gpt-4o-mini") == note
    # A name is matched whole: another model whose name holds the embedded one's is not it.
    assert runs.quality_note(f"{embedded}-finetuned") is None
