"""RQ jobs of tool runs (the queue their tool's engine calls for), and the sweep of the runs
their jobs lost."""

import logging

from catalogue import Tool
from jobs.webhooks import emit
from jobs.workflows import advance_workflow
from models import Run
from services import run_ends, runs, sweeper
from services.events import run_event
from services.queue import dispatcher
from services.run_events import END, run_events

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
    runs.end_transaction()  # the run stays loaded, for its announcement
    if run is not None:
        log.info("run %s of %s ended %s", run_id, run.tool_slug, run.status)
        _ended(run)


def fail_abandoned_run(
    run_id: str, message: str = "The run did not finish in time; nothing was charged."
) -> bool:
    """The job died or ran out of time: fail its run (quota released) unless it ended, and
    announce that. Returns whether this call failed it."""
    failed = run_ends.fail_unfinished(run_id, message)
    runs.end_transaction()  # the run stays loaded, for its announcement
    if failed is None:
        return False
    log.warning("run %s failed: its job died or timed out", run_id)
    _ended(failed)
    return True


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
        failed += run_ends.fail_unfinished(stale.run_id, stale.message) is not None
        advance_workflow(stale.workflow_run_id)  # commits the step's failure first
    for workflow_run_id in sweeper.stalled_workflow_runs():
        advance_workflow(workflow_run_id)
    if failed:
        log.warning("sweep: failed %d stale run(s)", failed)
    return failed


def _ended(run: Run) -> None:
    """Wake the caller still waiting, end the run's events for those who follow them, and
    announce the end to one who stopped waiting (the statement that ended the run said
    which: ``run.announce_end``)."""
    dispatcher().finished(run.id)
    run_events().append(run.id, END)
    if run.announce_end:
        emit(run.api_key_id, run_event(run), f"evt_{run.id}")
