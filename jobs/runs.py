"""RQ jobs of tool runs (the queue their tool's engine calls for), and the sweep of the runs
their jobs lost."""

import logging

from sqlalchemy import select

from catalogue import Tool
from extensions import db
from jobs.webhooks import emit
from jobs.workflows import advance_workflow
from models import Run
from services import runs, sweeper
from services.events import run_event
from services.queue import dispatcher

log = logging.getLogger(__name__)

# A queued run still going after this long is failed (its job is given up on).
RUN_TIMEOUT = 600


def enqueue_run(run_id: str, tool: Tool, *, awaited: bool = False, site: bool = False) -> None:
    """Queue a submitted run's job (after the commit that created the run), on the queue its
    tool's engine calls for (``runs.queue_for``). ``awaited``: a caller will wait for it;
    ``site``: a run of the site's visitors, which waits behind the API's runs."""
    dispatcher().enqueue(
        run_tool_job,
        run_id,
        job_id=run_id,
        timeout=RUN_TIMEOUT,
        on_failure=fail_abandoned_run,
        awaited=awaited,
        queue=runs.queue_for(tool, site=site),
    )


def run_tool_job(run_id: str) -> None:
    """Run one queued tool run to its end, then wake whoever waits for it."""
    run = runs.execute(run_id)
    # Read before the commit expires them (reading after cost a query).
    ended = None if run is None else (run.tool_slug, run.status)
    db.session.commit()
    if ended is not None:
        log.info("run %s of %s ended %s", run_id, *ended)
        _ended(run_id)


def fail_abandoned_run(
    run_id: str, message: str = "The run did not finish in time; nothing was charged."
) -> bool:
    """The job died or ran out of time: fail its run (quota released) unless it ended, and
    announce that. Returns whether this call failed it."""
    failed = runs.fail_unfinished(run_id, message)
    db.session.commit()
    if failed:
        log.warning("run %s failed: its job died or timed out", run_id)
        _ended(run_id)
    return failed


def sweep_stale_runs() -> int:
    """Fail the runs whose jobs the queue lost (``services.sweeper``), as their job's own
    failure would: quota released, the waiter woken, ``tool.failed`` announced, or for a
    workflow step its workflow run failed and ``workflow.failed`` announced; then advance
    the workflow runs no step is moving. Runs periodically in every worker (and the
    embedded queue). Returns how many runs it failed."""
    failed = 0
    for stale in sweeper.find_stale():
        if stale.workflow_run_id is None:
            failed += fail_abandoned_run(stale.run_id, stale.message)
            continue
        failed += runs.fail_unfinished(stale.run_id, stale.message)
        advance_workflow(stale.workflow_run_id)  # commits the step's failure first
    for workflow_run_id in sweeper.stalled_workflow_runs():
        advance_workflow(workflow_run_id)
    if failed:
        log.warning("sweep: failed %d stale run(s)", failed)
    return failed


def _ended(run_id: str) -> None:
    """Wake the caller still waiting, or announce the end to one who stopped waiting."""
    dispatcher().finished(run_id)
    # Read the flag after the run ended: the caller sets it only while the run is going. A
    # query of three columns says whether to announce (a caller that waited: nothing).
    notify, key_id, status = db.session.execute(
        select(Run.notify, Run.api_key_id, Run.status).where(Run.id == run_id)
    ).one()
    if notify and key_id and status in ("succeeded", "failed"):
        emit(key_id, run_event(db.session.get(Run, run_id)), f"evt_{run_id}")
