"""A queued run's (and a workflow run's) quota reservation is held until the commit that
creates its run: given back when the request fails first (a database error), and by a
worker's sweep when its process died in between (services/runs.py, ``Held``)."""

import pytest
import sqlalchemy as sa

from catalogue import load_workflows
from engines import get_engine
from extensions import db
from jobs.maintenance import run_maintenance
from services import clock, keys, quota, runs, submissions
from tests.helpers import auth, needs_pg, needs_redis

pytestmark = [needs_pg, needs_redis]

ASYNC = {"Prefer": "respond-async"}
TOOL_RUN = {"slug": "word-counter", "input": "one two three"}


def _calls_today(raw: str) -> int:
    return quota.store().usage(keys.resolve(raw).key_id, clock.now()).calls


def _submitting(app) -> list[bytes]:
    return app.extensions["redis"].zrange(quota.SUBMITTING, 0, -1)


def _local_workflow(app):
    """A workflow whose every step runs here (no provider needed), with a text input."""
    tools = app.extensions["catalogue"]
    for workflow in load_workflows():
        steps_run = all(
            get_engine(tools.get(step.tool).engine).unavailable_reason() is None
            for step in workflow.steps
        )
        if steps_run and not workflow.binary_input:
            return workflow
    pytest.skip("no workflow runs here without a provider")


def _database_down(monkeypatch, where: str):
    """The database fails as an outage does, at ``where`` ("flush" or "commit")."""

    def fail(*args, **kwargs):
        raise sa.exc.OperationalError("INSERT", {}, Exception("server closed the connection"))

    monkeypatch.setattr(db.session, where, fail)


@pytest.mark.parametrize("where", ["flush", "commit"])
def test_an_async_run_refused_by_the_database_gives_its_reservation_back(
    app, client, make_key, monkeypatch, where
):
    raw = make_key("pro")
    first = client.post("/v1/tools/run", headers={**auth(raw), **ASYNC}, json=TOOL_RUN)
    assert first.status_code == 202
    before = _calls_today(raw)
    with monkeypatch.context() as patched:
        _database_down(patched, where)
        for _ in range(4):
            refused = client.post("/v1/tools/run", headers={**auth(raw), **ASYNC}, json=TOOL_RUN)
            assert refused.status_code == 503, refused.get_json()
            assert "nothing was charged" in refused.get_json()["detail"].lower()
    db.session.rollback()
    assert _calls_today(raw) == before
    assert _submitting(app) == []


@pytest.mark.parametrize("where", ["flush", "commit"])
def test_a_workflow_refused_by_the_database_gives_every_steps_reservation_back(
    app, client, make_key, monkeypatch, where
):
    workflow = _local_workflow(app)
    raw = make_key("agency")
    body = {"workflow_id": workflow.id, "input": workflow.example}
    assert client.post("/v1/workflows/run", headers=auth(raw), json=body).status_code == 202
    before = _calls_today(raw)
    assert before == len(workflow.steps)
    with monkeypatch.context() as patched:
        _database_down(patched, where)
        refused = client.post("/v1/workflows/run", headers=auth(raw), json=body)
        assert refused.status_code == 503, refused.get_json()
    db.session.rollback()
    assert _calls_today(raw) == before
    assert _submitting(app) == []


def test_a_committed_submission_is_settled(app, client, make_key):
    raw = make_key("pro")
    assert (
        client.post("/v1/tools/run", headers={**auth(raw), **ASYNC}, json=TOOL_RUN).status_code
        == 202
    )
    assert _calls_today(raw) == 1
    assert _submitting(app) == []


def test_the_sweep_gives_back_a_submission_whose_process_died_before_its_commit(app, make_key):
    """The process died between the reservation and the commit: its run does not exist;
    another whose process died just after its commit keeps its reservation."""
    context = keys.resolve(make_key("pro"))
    tool = app.extensions["catalogue"].get("word-counter")
    died = runs.submit(context, tool, {"text": "a"}, notify=True)
    db.session.rollback()  # the process died: nothing committed, nothing given back
    committed = runs.submit(context, tool, {"text": "b"}, notify=True)
    db.session.commit()  # committed, then died before settling
    assert quota.store().usage(context.key_id, clock.now()).calls == 2
    assert len(_submitting(app)) == 2
    # Younger than the grace: left alone.
    assert submissions.release_abandoned(60) == 0
    assert submissions.release_abandoned(0) == 1
    assert quota.store().usage(context.key_id, clock.now()).calls == 1
    assert _submitting(app) == []
    assert died.held.run_id != committed.held.run_id


def test_a_workers_maintenance_pass_gives_back_what_a_dead_process_held(app, make_key):
    """The task runs in every worker's maintenance (every SWEEP_INTERVAL_SECONDS, 15 s):
    with the grace of RUN_SUBMIT_GRACE_SECONDS (20 s) a dead submission is given back
    within about 35 s."""
    context = keys.resolve(make_key("pro"))
    tool = app.extensions["catalogue"].get("word-counter")
    runs.submit(context, tool, {"text": "a"}, notify=True)
    db.session.rollback()  # the process died between its reservation and its commit
    assert quota.store().usage(context.key_id, clock.now()).calls == 1
    app.config["RUN_SUBMIT_GRACE_SECONDS"] = 0
    run_maintenance(app)
    assert quota.store().usage(context.key_id, clock.now()).calls == 0
    assert _submitting(app) == []
