"""Jobs that deliver webhook events (queue: io, as they wait on the receiver), one attempt
per job.

``emit`` records the delivery and queues its first attempt; a failed attempt queues the
next one after the retry delay (RQ's scheduler, or a timer in the embedded default).
``deliver_due`` queues every pending attempt that is overdue and not in flight: it catches
attempts whose scheduled job was lost (a process restarted, Redis flushed); the periodic
maintenance runs it (services/sweeper.py). The rules (schedule, leases, what counts as
success) live in ``services.webhooks``.
"""

import logging
import secrets

from services import webhooks
from services.queue import IO_QUEUE, dispatcher

log = logging.getLogger(__name__)

# One attempt takes at most TIMEOUT_SECONDS on the wire; the rest is database work.
JOB_TIMEOUT = 30
_JOB_PREFIX = "webhook-"


def emit(key_id: str, event: dict, event_id: str) -> None:
    """Announce ``event`` to the key's webhook: its delivery is recorded (committing the
    session: call this once the event's cause is committed) and its first attempt queued.
    ``event_id`` names it, the ``webhook-id`` of every attempt; emitting the same event id
    again for the key does nothing. Every event of the product goes out through here."""
    delivery = webhooks.record(key_id, event, event_id)
    if delivery is not None and delivery.status == "pending":
        schedule(delivery.id)


def schedule(delivery_id: str, delay: float = 0) -> None:
    """Queue an attempt of the delivery, at once or after ``delay`` seconds."""
    options = {
        "job_id": f"{_JOB_PREFIX}{delivery_id}-{secrets.token_hex(4)}",
        "timeout": JOB_TIMEOUT,
        "on_failure": _attempt_died,
        "queue": IO_QUEUE,
    }
    if delay > 0:
        dispatcher().enqueue_in(delay, deliver, delivery_id, **options)
    else:
        dispatcher().enqueue(deliver, delivery_id, **options)


def deliver(delivery_id: str) -> None:
    """Make the delivery's due attempt, and queue the next one if it failed."""
    outcome = webhooks.attempt(delivery_id)
    if outcome is not None and outcome.retry_in is not None:
        schedule(delivery_id, outcome.retry_in)


def deliver_due() -> int:
    """Queue every overdue attempt that is not in flight; returns how many."""
    due = webhooks.due_ids()
    for delivery_id in due:
        schedule(delivery_id)
    if due:
        log.info("queued %d due webhook attempt(s)", len(due))
    return len(due)


def _attempt_died(job_id: str) -> None:
    """The attempt's job died or timed out: try again once its lease has run out."""
    delivery_id = job_id.removeprefix(_JOB_PREFIX).rsplit("-", 1)[0]
    log.warning("webhook attempt job %s died; delivery %s is tried again", job_id, delivery_id)
    schedule(delivery_id, webhooks.LEASE_SECONDS)
