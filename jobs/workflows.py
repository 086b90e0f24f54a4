"""RQ jobs of workflow runs: one job per step, on the queue its tool's engine calls for.

A step's job runs it as a queued tool run, then advances its workflow run: the steps it
unblocked are queued, or the run ends and its event goes out through ``jobs.webhooks.emit``.
``advance_workflow`` is safe to call at any time (a sweep may call it for runs left running
by a worker that died between a step's end and the advance).
"""

import logging

from sqlalchemy import select

from extensions import db
from jobs.webhooks import emit
from models import Run
from services import run_ends, runs, workflows
from services.queue import DEFAULT_QUEUE, dispatcher
from services.run_events import END, STEP_ENDED, run_events, step_event
from services.workflows import Progress

log = logging.getLogger(__name__)

# A step still going after this long is failed, and with it the workflow run.
STEP_TIMEOUT = 600


def run_step_job(run_id: str, workflow_run_id: str, first: bool = False) -> None:
    """Run one workflow step, then start the steps it unblocked or end the workflow: the
    step's end and that advance are one transaction, under the workflow run's lock.
    ``first``: a step the run started with (it marks the run running)."""
    if first:
        workflows.begin_step(workflow_run_id)  # committed with the step's claim
    held: list[workflows.Held | None] = []
    run = runs.execute(run_id, before_end=lambda: held.append(workflows.lock(workflow_run_id)))
    if run is not None:
        log.info("step %s (%s) of workflow run %s ended %s", run.step_id, run.tool_slug,
                 workflow_run_id, run.status)  # fmt: skip
        if held and held[0] is not None:
            held[0].ended(run)
        step_event(run, STEP_ENDED)
    dispatch(workflows.advance(workflow_run_id, held=held[0] if held else None))


def fail_abandoned_step(run_id: str) -> None:
    """The step's job died or ran out of time: fail the step (quota released), and so the run."""
    failed = run_ends.fail_unfinished(
        run_id, "The step did not finish in time; nothing was charged."
    )
    db.session.commit()
    step = db.session.get(Run, run_id)
    if step is not None and step.workflow_run_id is not None:
        if failed:
            log.warning("step %s of workflow run %s failed: its job died or timed out",
                        run_id, step.workflow_run_id)  # fmt: skip
        advance_workflow(step.workflow_run_id)


def advance_workflow(workflow_run_id: str) -> None:
    """Queue the steps whose inputs are ready, or end the run and announce it."""
    dispatch(workflows.advance(workflow_run_id))


def dispatch(progress: Progress) -> None:
    """Commit what ``progress`` came from, then enqueue its steps, and if it ended the run,
    end the run's events and emit its webhook event."""
    db.session.commit()
    for run_id in progress.queued:
        enqueue_step(run_id, progress.workflow_run_id)
    if progress.event is not None:
        run_events().append(progress.workflow_run_id, END)
    if progress.event is not None and progress.key_id is not None:
        emit(progress.key_id, progress.event, f"evt_{progress.workflow_run_id}")
        log.info("workflow run %s: %s", progress.workflow_run_id, progress.event["event"])


def enqueue_step(run_id: str, workflow_run_id: str, *, first: bool = False) -> None:
    """Queue a step's job (after the commit that queued its run); ``first``: a step the
    workflow run starts with."""
    slug = db.session.scalar(select(Run.tool_slug).where(Run.id == run_id))
    tool = runs.find_tool(slug) if slug is not None else None
    dispatcher().enqueue(
        run_step_job,
        run_id,
        workflow_run_id,
        first,
        job_id=run_id,
        timeout=STEP_TIMEOUT,
        on_failure=fail_abandoned_step,
        # A step whose tool is gone fails at once, where it is: any queue will do.
        queue=runs.queue_for(tool) if tool is not None else DEFAULT_QUEUE,
    )
