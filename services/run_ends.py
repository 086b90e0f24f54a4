"""How a run ends: its terminal state written once (``conclude``: a conditional update, so
a late result of a canceled or timed-out run is discarded), cancel, a waiter gone, and the
kinds a failure is named by (docs/architecture/runs.md)."""

import logging
import time

from rq.timeouts import JobTimeoutException
from sqlalchemy import and_, bindparam, exists, update
from sqlalchemy.orm.attributes import set_committed_value

from engines import EngineError, ModelUnfit, ProviderUnavailable
from extensions import db
from models import TERMINAL_STATES, ApiKey, Run
from services import allowance, clock, embed_caps, quota
from services.queue import dispatcher

log = logging.getLogger(__name__)


# The HTTP status of a failed run by its error's kind: the input (422), no provider could
# serve (503), the embedded model's answers failed the tool's checks (503); else 500.
FAILURE_STATUS = {"input": 422, "provider": 503, "model_unfit": 503}


def fail_unfinished(run_id: str, message: str) -> Run | None:
    """Fail a run its worker left unfinished (died or timed out): the run, or None if it had
    ended."""
    run = db.session.get(Run, run_id)
    if run is None or run.status in TERMINAL_STATES:
        return None
    return (
        run
        if conclude(run, None, "failed", error=error_record("internal", message, None))
        else None
    )


def fail(run: Run, kind: str, message: str) -> bool:
    """Fail a run that has not ended (``kind``: see ``RunFailed``), releasing its
    quota; False if it had ended. A workflow fails a step whose inputs turn out invalid."""
    return conclude(run, None, "failed", error=error_record(kind, message, None))


def cancel(run: Run) -> bool:
    """Cancel a queued or running run; False when it had already ended (a terminal state
    never changes: an inline run read from the recorder is not in the database yet)."""
    if run.status in TERMINAL_STATES:
        return False
    if not conclude(run, None, "canceled"):
        return False
    dispatcher().stop(run.id)  # a model generating for it stops
    return True


def mark_waiter_gone(run_id: str) -> bool:
    """The caller stops waiting: True (announce the end by event) if the run is still going,
    False if it ended meanwhile (answer its result now, announce nothing)."""
    result = db.session.execute(
        update(Run)
        .where(Run.id == run_id, Run.status.in_(("queued", "running")))
        .values(notify=True)
    )
    return result.rowcount == 1


_RUNS, _KEYS = Run.__table__, ApiKey.__table__
# The end of a run (its terminal state and what comes with it, as parameters named after
# the columns), unless it has ended; it answers whether to announce the end by a webhook
# event. A Core statement built once: the ORM's update cost more than the database's work.
_END = (
    update(_RUNS)
    .where(_RUNS.c.id == bindparam("ended_id"), _RUNS.c.status.notin_(TERMINAL_STATES))
    .returning(
        and_(
            # Set only while the run is going (``mark_waiter_gone``): read as it ends.
            _RUNS.c.notify,
            exists()
            .where(_KEYS.c.id == _RUNS.c.api_key_id, _KEYS.c.webhook_url.is_not(None))
            .correlate(_RUNS),
        )
    )
)


def conclude(run: Run, started: float | None, status: str, **fields) -> bool:
    """Move ``run`` to a terminal state unless it is in one; release quota unless it
    succeeded. Returns whether this call made the move (and then sets ``run.announce_end``)."""
    finished_at = clock.now()
    values = {"status": status, "finished_at": finished_at, **fields}
    begun = clock.as_utc(run.started_at)
    if started is not None:
        values["duration_ms"] = int((time.perf_counter() - started) * 1000)
    elif begun is not None:
        values["duration_ms"] = int((finished_at - begun).total_seconds() * 1000)
    announce = db.session.execute(_END, {"ended_id": run.id, **values}).scalar()
    if announce is None:
        db.session.refresh(run)  # what ended it
        return False
    for name, value in values.items():  # as written: no query to read them back
        set_committed_value(run, name, value)
    run.announce_end = bool(announce) and status in ("succeeded", "failed")
    if status != "succeeded" and run.source == "web" and run.workflow_run_id is None:
        allowance.release_run(run)  # a workflow's steps hold no allowance
    elif status != "succeeded" and not run.sandbox and run.api_key_id:
        quota.store().release(run.api_key_id, 1, clock.utc_day(clock.as_utc(run.created_at)))
    if status != "succeeded" and run.source == "embed":
        embed_caps.release_run(run)  # the widget's day caps, as an inline run gives them back
    return True


def error_record(kind: str, message: str, retry_after: int | None) -> dict:
    error = {"code": kind, "message": message}
    if retry_after is not None:
        error["retry_after"] = retry_after
    return error


def classify(error: Exception) -> tuple[str, str, int | None]:
    if isinstance(error, EngineError):
        return "input", str(error), None
    if isinstance(error, ModelUnfit):
        return "model_unfit", str(error), None
    if isinstance(error, ProviderUnavailable):
        return "provider", str(error), error.retry_after
    if isinstance(error, JobTimeoutException):  # the worker cut the job off at its timeout
        return "internal", "The run did not finish in time; nothing was charged.", None
    log.exception("tool run failed unexpectedly", exc_info=error)
    return "internal", "The tool failed unexpectedly; the run id helps us find out why.", None
