"""Stale runs, and the periodic maintenance that sweeps them.

A run is stale when it is ``queued`` or ``running`` but the queue has lost its job
(``services.queue``'s ``job_state``): the job no longer exists or ended without ending its
run, the worker running it stopped (its lease lapsed), or it is past its deadline plus
``SWEEP_GRACE_SECONDS``. A run younger than that grace is not judged (its job may be about to
be enqueued), and a run is declared stale only when its job was seen lost on two passes at
least one lease renewal apart: a lease that lapsed while Redis was briefly unreachable is
renewed by its live worker before anyone judges it. ``jobs.runs.sweep_stale_runs`` fails
what this finds (no retry: see README, "Operating it"), and advances the workflow runs left
without a live step (a failed step fails its workflow run; a worker that died between a
step's end and the advance leaves one waiting).

The maintenance runs every ``SWEEP_INTERVAL_SECONDS`` (0 turns it off) in a thread of each
``flask worker`` process and, in the embedded default, of the process running the
in-process queue. Every pass runs ``MAINTENANCE_TASKS``; each is safe to run from several
processes at once, since every change it makes is a conditional update.
"""

import logging
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

import redis
from flask import Flask, current_app
from sqlalchemy import bindparam, select
from sqlalchemy.exc import OperationalError
from werkzeug.utils import import_string

from extensions import db
from models import Run, WorkflowRun
from services import clock
from services.queue import LOST, dispatcher

log = logging.getLogger(__name__)

MAINTENANCE_TASKS = (
    "services.recorder.replay_journal",
    "services.runs.sweep_submissions",
    "jobs.runs.sweep_stale_runs",
    "jobs.webhooks.deliver_due",
)
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


# --- the periodic maintenance -------------------------------------------------------------


class Maintenance(threading.Thread):
    """Runs ``MAINTENANCE_TASKS`` at once, then every ``interval`` seconds until stopped."""

    def __init__(self, app: Flask, interval: float):
        super().__init__(name="maintenance", daemon=True)
        self.app = app
        self.interval = interval
        self._stopped = threading.Event()

    def run(self) -> None:
        run_maintenance(self.app)
        while not self._stopped.wait(self.interval):
            run_maintenance(self.app)

    def stop(self) -> None:
        self._stopped.set()


def start_maintenance(app: Flask) -> Maintenance | None:
    """Start the periodic maintenance every ``SWEEP_INTERVAL_SECONDS`` (None when 0)."""
    interval = float(app.config["SWEEP_INTERVAL_SECONDS"])
    if interval <= 0:
        return None
    maintenance = Maintenance(app, interval)
    maintenance.start()
    return maintenance


def run_maintenance(app: Flask) -> None:
    """One pass: every task in its own app context; a failing task never stops the others
    (an unreachable Redis or database is one line in the log, retried next pass)."""
    for path in MAINTENANCE_TASKS:
        try:
            with app.app_context():
                import_string(path)()
        except (redis.RedisError, OperationalError) as error:
            log.warning("maintenance task %s could not run: %s", path, error)
        except Exception:
            log.exception("maintenance task %s failed", path)
