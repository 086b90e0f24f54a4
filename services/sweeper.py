"""Stale runs, and the periodic maintenance that sweeps them.

A run is stale when it is ``queued`` or ``running`` but the queue has lost its job
(``services.queue``'s ``job_state``): the job no longer exists or ended without ending its
run, the worker running it stopped (its lease lapsed), or it is past its deadline plus
``SWEEP_GRACE_SECONDS``. A run younger than that grace is not judged (its job may be about to
be enqueued), and a run is declared stale only when its job was seen lost on two passes at
least one lease renewal apart: a lease that lapsed while Redis was briefly unreachable is
renewed by its live worker before anyone judges it. ``jobs.runs.sweep_stale_runs`` fails
what this finds (no retry: see docs/operating/outages.md), and advances the workflow runs left
without a live step (a failed step fails its workflow run; a worker that died between a
step's end and the advance leaves one waiting).

The periodic maintenance that runs the sweep is ``jobs.maintenance``.
"""

import threading
import time
from dataclasses import dataclass
from datetime import timedelta

from flask import current_app
from sqlalchemy import bindparam, select

from extensions import db
from models import Run, WorkflowRun
from services import clock
from services.queue import LOST, dispatcher

# Runs judged per pass (the oldest first); the rest wait for the next pass.
BATCH = 200

_MESSAGES = {
    "queued": "The run was lost before it started (its job left the queue); nothing was "
    "charged. Run it again.",
    "running": "The run stopped before it finished (its worker stopped, or it ran past its "
    "time limit); nothing was charged. Run it again.",
}

# Runs whose job was seen lost, with when (monotonic) it was first seen so, in this process.
_suspects: dict[str, float] = {}
_suspects_lock = threading.Lock()


def _unfinished(status_column):
    """``status IN ('queued', 'running')`` with the states as literals, so that PostgreSQL
    uses the partial indexes ``ix_*_unfinished`` even in a cached generic plan."""
    states = bindparam("unfinished", tuple(_MESSAGES), expanding=True, literal_execute=True)
    return status_column.in_(states)


@dataclass(frozen=True)
class Stale:
    run_id: str
    message: str
    workflow_run_id: str | None = None


def find_stale() -> list[Stale]:
    """The stale runs: queued or running, older than the grace, their job lost on two passes
    at least a lease renewal apart."""
    config = current_app.config
    grace = float(config["SWEEP_GRACE_SECONDS"])
    confirm_after = float(config["JOB_LEASE_SECONDS"]) / 3
    candidates = db.session.execute(
        select(Run.id, Run.status, Run.created_at, Run.workflow_run_id)
        .where(_unfinished(Run.status), Run.created_at < _cutoff(grace))
        .order_by(Run.created_at)
        .limit(BATCH)
    ).all()
    queue = dispatcher()
    stale = []
    with _suspects_lock:
        judged = set()
        for run_id, status, created_at, workflow_run_id in candidates:
            judged.add(run_id)
            if queue.job_state(run_id, created_at, grace) != LOST:
                _suspects.pop(run_id, None)
                continue
            first_seen = _suspects.setdefault(run_id, time.monotonic())
            if time.monotonic() - first_seen >= confirm_after:
                stale.append(Stale(run_id, _MESSAGES[status], workflow_run_id))
        for run_id in set(_suspects) - judged:
            del _suspects[run_id]
    return stale


def stalled_workflow_runs() -> list[str]:
    """Workflow runs that have not ended, older than the grace, none of whose steps is queued
    or running: nothing will advance them but the sweep."""
    live_step = (
        select(Run.id)
        .where(Run.workflow_run_id == WorkflowRun.id, _unfinished(Run.status))
        .exists()
    )
    grace = float(current_app.config["SWEEP_GRACE_SECONDS"])
    return list(
        db.session.scalars(
            select(WorkflowRun.id)
            .where(
                _unfinished(WorkflowRun.status),
                WorkflowRun.created_at < _cutoff(grace),
                ~live_step,
            )
            .order_by(WorkflowRun.created_at)
            .limit(BATCH)
        )
    )


def _cutoff(grace: float):
    return clock.now() - timedelta(seconds=grace)
