"""What the run endpoints answer beyond the run: the day's usage noted for the headers, the
429 of a quota used up, and cancel (409 once a run has ended)."""

from collections.abc import Callable
from typing import Any

from flask import g

from blueprints.api.problems import Problem
from extensions import db
from services import clock, quota
from services.run_events import END, run_events


def cancel_or_409(run: Any, cancel: Callable[[Any], bool]) -> None:
    """Cancel a tool or workflow run with ``cancel`` and commit; 409 once it has ended. Its
    followers' streams end (``done``, canceled) at once."""
    if not cancel(run):
        db.session.rollback()
        raise Problem(
            409,
            "run_not_cancelable",
            f"The run has already ended ({run.status}); it cannot be canceled.",
        )
    db.session.commit()
    run_events().append(run.id, END)


def note_usage(reservation) -> None:
    """The day's usage a run's reservation says, for the rate-limit headers of its answer."""
    if reservation is not None:
        g._get_current_object().day_usage = quota.Usage(reservation.day, reservation.used, 0)


def quota_problem(reservation) -> Problem:
    """429 ``quota_exceeded`` for a reservation refused: the key's day is used up."""
    note_usage(reservation)
    return Problem(
        429,
        "quota_exceeded",
        f"This key has used all {reservation.limit} calls of today (UTC); "
        "the quota resets at 00:00 UTC.",
        headers={"Retry-After": clock.seconds_to_midnight()},
        limit=reservation.limit,
        remaining=0,
        resets_at=clock.next_midnight().isoformat().replace("+00:00", "Z"),
    )
