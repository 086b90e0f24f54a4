"""RQ jobs of tool runs (queue: default)."""

import logging

from extensions import db
from services import runs
from services.queue import dispatcher

log = logging.getLogger(__name__)


def run_tool_job(run_id: str) -> None:
    """Run one queued tool run to its end, then wake whoever waits for it."""
    run = runs.execute(run_id)
    db.session.commit()
    if run is not None:
        log.info("run %s of %s ended %s", run_id, run.tool_slug, run.status)
        dispatcher().finished(run_id)


def fail_abandoned_run(run_id: str) -> None:
    """The job died or ran out of time: fail its run (quota released) unless it ended."""
    if runs.fail_unfinished(run_id, "The run did not finish in time; nothing was charged."):
        log.warning("run %s failed: its job died or timed out", run_id)
    db.session.commit()
    dispatcher().finished(run_id)
