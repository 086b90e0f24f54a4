"""The periodic maintenance: every ``SWEEP_INTERVAL_SECONDS`` (0 turns it off), in a thread of
each ``flask worker`` process and, in the embedded default, of the process running the
in-process queue (``services.queue`` starts it through ``app.extensions["maintenance"]``,
which ``init_app`` sets: the queue is below the jobs it runs). Every pass runs
``MAINTENANCE_TASKS``; each is safe to run from several processes at once, since every
change it makes is a conditional update.
"""

import logging
import threading

import redis
from flask import Flask
from sqlalchemy.exc import OperationalError

from jobs.runs import sweep_stale_runs
from jobs.webhooks import deliver_due
from services import submissions
from services.recorder import replay_journal

log = logging.getLogger(__name__)

# The journal of inline runs replayed; submissions left half-made given back; stale runs
# failed (services/sweeper.py finds them); webhook deliveries that are due sent.
MAINTENANCE_TASKS = (replay_journal, submissions.sweep, sweep_stale_runs, deliver_due)


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
    for task in MAINTENANCE_TASKS:
        name = f"{task.__module__}.{task.__qualname__}"
        try:
            with app.app_context():
                task()
        except (redis.RedisError, OperationalError) as error:
            log.warning("maintenance task %s could not run: %s", name, error)
        except Exception:
            log.exception("maintenance task %s failed", name)


def init_app(app: Flask) -> None:
    """Let the in-process queue start the maintenance where it runs the jobs."""
    app.extensions["maintenance"] = start_maintenance
