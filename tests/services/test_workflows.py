"""The workflow engine on PostgreSQL and Redis: racing advances, inputs that turn out not to
fit, and terminal states that never change (services/workflows.py, without the queue)."""

import functools
import threading
import time

import pytest

import jobs.workflows
from catalogue import load_catalogue, load_workflows
from extensions import db
from models import Run, WorkflowRun
from services import clock, keys, quota, run_ends, runs, workflows
from tests.helpers import needs_pg


@pytest.fixture
def context(app, make_key):
    return keys.resolve(make_key("pro"))


def begin(context, workflow_id: str, value: str) -> WorkflowRun:
    run, _, _ = workflows.start(context, load_workflows().get(workflow_id), value)
    db.session.commit()
    return run


def succeed(run: WorkflowRun, *step_ids: str, **outputs) -> None:
    """Record the given steps as succeeded with their tool's sample output (or ``outputs``)."""
    for step in workflows.step_runs(run.id):
        if step.step_id in step_ids:
            step.status = "succeeded"
            step.output = (
                outputs.get(step.step_id) or load_catalogue().get(step.tool_slug).sample_output()
            )
    db.session.commit()


def steps(run: WorkflowRun) -> dict[str, Run]:
    return {step.step_id: step for step in workflows.step_runs(run.id)}


def in_threads(*calls) -> None:
    """Make the calls at once, each in a thread of its own, and wait for them all."""
    threads = [threading.Thread(target=call) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def calls(context) -> int:
    return quota.store().usage(context.key_id, clock.now()).calls


def test_start_reserves_a_call_per_step_and_queues_the_first_steps(context):
    run = begin(context, "review-insights", "Great app, sync fails.")
    assert calls(context) == 3
    assert {s: r.status for s, r in steps(run).items()} == {
        "sentiment": "queued",
        "themes": "queued",
        "summary": "pending",
    }
    assert steps(run)["sentiment"].input == {"text": "Great app, sync fails.", "by_sentence": True}
    assert run.status == "queued" and run.workflow_id == "review-insights"


@needs_pg
def test_two_advances_racing_queue_a_shared_dependent_once(app, context, monkeypatch):
    run = begin(context, "review-insights", "Great app, sync fails.")
    succeed(run, "sentiment", "themes")
    run_id = run.id  # read here: the threads must not touch this thread's session
    # Every advance reaches the workflow run's lock before any of them takes it.
    barrier = threading.Barrier(4)
    lock = workflows.lock

    def together(workflow_run_id):
        barrier.wait(timeout=10)
        return lock(workflow_run_id)

    monkeypatch.setattr(workflows, "lock", together)
    queued = []

    def advance():
        with app.app_context():
            progress = workflows.advance(run_id)
            db.session.commit()
            queued.extend(progress.queued)

    in_threads(*[advance] * 4)
    summary = steps(run)["summary"]
    assert queued == [summary.id]
    assert summary.status == "queued"
    assert summary.input["text"].startswith("Overall sentiment: negative")


@needs_pg
def test_two_steps_ending_at_once_queue_their_shared_dependent_once(app, monkeypatch, make_key):
    """A step's end and its advance are one transaction under the workflow run's lock: of
    two steps ending at once, the second to take the lock sees the first's end. Without the
    lock each would see the other still running, and the dependent would never start."""
    sandbox = keys.resolve(make_key("pro", sandbox=True))
    run = begin(sandbox, "review-insights", "Great app, sync fails.")
    first = [step.id for step in steps(run).values() if step.status == "queued"]
    assert len(first) == 2
    run_id = run.id
    both_done = threading.Barrier(2)
    lock = workflows.lock

    def slow_to_end(workflow_run_id):
        both_done.wait(timeout=10)  # both steps have their output: their ends race
        held = lock(workflow_run_id)
        time.sleep(0.3)  # the first to lock is slow to end: the other must wait for it
        return held

    monkeypatch.setattr(workflows, "lock", slow_to_end)
    enqueued = []
    monkeypatch.setattr(jobs.workflows, "enqueue_step", lambda run_id, *_: enqueued.append(run_id))

    def run_step(step_id):
        with app.app_context():
            jobs.workflows.run_step_job(step_id, run_id, True)

    in_threads(*(functools.partial(run_step, step_id) for step_id in first))
    summary = steps(run)["summary"]
    assert enqueued == [summary.id]
    assert summary.status == "queued"
    assert {steps(run)[s].status for s in ("sentiment", "themes")} == {"succeeded"}


def test_a_made_input_that_does_not_fit_fails_the_step_and_the_run(context):
    run = begin(context, "code-to-docs", "x = 1")
    succeed(run, "explanation", explanation={"text": "   "})
    progress = workflows.advance(run.id)
    db.session.commit()
    assert progress.queued == []
    readme = steps(run)["readme"]
    assert readme.status == "failed" and readme.error["code"] == "input"
    assert "description: Must not be blank." in readme.error["message"]
    db.session.refresh(run)
    assert run.status == "failed" and run.error["step"] == "readme"
    # The explanation succeeded and keeps its call; the three others are given back.
    assert {s: r.status for s, r in steps(run).items()} == {
        "explanation": "succeeded",
        "tests": "canceled",
        "docstrings": "canceled",
        "readme": "failed",
    }
    assert calls(context) == 1
    assert progress.event["event"] == "workflow.failed"
    assert progress.event["tool"] == "readme-writer"


def test_the_run_completes_once_with_its_output_and_never_changes_again(context):
    run = begin(context, "review-insights", "Great app, sync fails.")
    succeed(run, "sentiment", "themes", "summary")
    first = workflows.advance(run.id)
    db.session.commit()
    assert first.event["event"] == "workflow.completed"
    assert first.event["tool"] == "executive-summary-writer"
    db.session.refresh(run)
    assert run.status == "succeeded"
    assert set(run.output) == {
        "sentiment",
        "sentiment_score",
        "themes",
        "recommendations",
        "executive_summary",
    }
    again = workflows.advance(run.id)
    assert again.event is None and again.queued == []
    assert workflows.cancel(run) is False
    db.session.refresh(run)
    assert run.status == "succeeded" and calls(context) == 3


def test_cancel_releases_every_unfinished_step_and_a_late_result_is_discarded(context):
    run = begin(context, "product-launch", "A reusable beeswax food wrap")
    description = steps(run)["description"]
    assert workflows.cancel(run) is True
    db.session.commit()
    assert calls(context) == 0
    assert {r.status for r in steps(run).values()} == {"canceled"}
    # The first step's job comes late: it finds its run canceled and runs nothing.
    assert runs.execute(description.id) is None
    assert workflows.advance(run.id).queued == []
    db.session.refresh(run)
    assert run.status == "canceled" and calls(context) == 0


def test_a_step_canceled_on_its_own_fails_the_run(context):
    run = begin(context, "review-insights", "Great app, sync fails.")
    run_ends.cancel(steps(run)["themes"])
    db.session.commit()
    progress = workflows.advance(run.id)
    db.session.commit()
    db.session.refresh(run)
    assert run.status == "failed"
    assert run.error == {
        "code": "canceled",
        "message": "The step themes (feedback-theme-synthesizer) was canceled.",
        "step": "themes",
        "tool": "feedback-theme-synthesizer",
    }
    assert progress.event["event"] == "workflow.failed" and calls(context) == 0
