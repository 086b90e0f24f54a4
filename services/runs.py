"""Tool runs: reserve quota, run the engine, record the run and its credits.

The run and its usage row are handed to the recorder (written in batches); the caller
commits once afterwards for the free-call claim. A failed run is recorded too, and its
quota reservation is already released.
"""

import logging
import time
from dataclasses import dataclass

from catalogue import Tool
from engines import EngineError, ProviderUnavailable, run_tool
from models import Run
from models.base import new_uuid
from services import clock, quota, usage
from services.keys import KeyContext
from services.quota import Reservation
from services.recorder import recorder

log = logging.getLogger(__name__)


class QuotaExceeded(Exception):
    def __init__(self, reservation: Reservation):
        super().__init__("daily quota exhausted")
        self.reservation = reservation


class RunFailed(Exception):
    """The run was recorded as failed; ``kind`` is input, provider or internal."""

    def __init__(self, run: Run, kind: str, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.run = run
        self.kind = kind
        self.message = message
        self.retry_after = retry_after


@dataclass(frozen=True)
class RunResult:
    run: Run
    reservation: Reservation | None


def run_inline(context: KeyContext, tool: Tool, inputs: dict) -> RunResult:
    """Run a light tool in the request. Raises QuotaExceeded or RunFailed."""
    moment = clock.now()
    reservation = None
    guessed_credits = 0
    if not context.sandbox:
        guessed_credits = 0 if usage.likely_free(context) else tool.credits
        reservation = quota.store().reserve(
            context.key_id, context.daily_quota, 1, moment, guessed_credits
        )
        if not reservation.granted:
            raise QuotaExceeded(reservation)
    run = Run(
        id=new_uuid(),
        account_id=context.account_id,
        api_key_id=context.key_id,
        tool_slug=tool.slug,
        status="running",
        sandbox=context.sandbox,
        credits=0,
        input=inputs,
        created_at=moment,
        started_at=moment,
    )
    started = time.perf_counter()
    try:
        output = tool.sample_output() if context.sandbox else run_tool(tool, inputs)
    except Exception as error:
        if reservation is not None:
            quota.store().release(context.key_id, 1, reservation.day, guessed_credits)
        kind, message, retry_after = _classify(error)
        _finish(run, started, "failed", error={"code": kind, "message": message})
        recorder().record(run)
        raise RunFailed(run, kind, message, retry_after) from error
    _finish(run, started, "succeeded", output=output)
    if reservation is not None:
        free = usage.claim_free_call(context)
        run.credits = 0 if free else tool.credits
        if run.credits != guessed_credits:
            quota.store().add_credits(
                context.key_id, run.credits - guessed_credits, reservation.day
            )
        event = usage.usage_event(context, tool.slug, run.id, run.credits, free, moment)
        recorder().record(run, event)
    else:
        recorder().record(run)
    return RunResult(run, reservation)


def _finish(run: Run, started: float, status: str, **fields) -> None:
    run.status = status
    run.finished_at = clock.now()
    run.duration_ms = int((time.perf_counter() - started) * 1000)
    for name, value in fields.items():
        setattr(run, name, value)


def _classify(error: Exception) -> tuple[str, str, int | None]:
    if isinstance(error, EngineError):
        return "input", str(error), None
    if isinstance(error, ProviderUnavailable):
        return "provider", str(error), error.retry_after
    log.exception("tool run failed unexpectedly", exc_info=error)
    return "internal", "The tool failed unexpectedly; the run id helps us find out why.", None
