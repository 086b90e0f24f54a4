"""services.runs: what holds while a run's engine works."""

from extensions import db
from services import runs
from tests.conftest import auth


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
