"""An agency widget's caps (services/embeds.py): before a run, three are counted: per minute
(the widget), per visitor per day (a salted daily hash of the client address, as
services/allowance.py makes it; no cookie) and per day (the widget); over any of them
nothing runs and nothing is charged. A run that does not succeed gives its day's counts
back: an inline one at once (``release``), a queued one when services/runs.py concludes it
(``release_run``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select

from extensions import db
from models import Embed, Run
from services import allowance, clock, ratelimit

# Counters live a day past their day (a run reserved at 23:59:59 is released later).
_TTL_SECONDS = 2 * 86400


class CapReached(Exception):
    """Over one of the widget's caps (``cap``: per_minute, per_visitor_daily, daily) or its
    key's daily quota (``quota``): nothing ran. ``message`` is for the visitor."""

    def __init__(self, cap: str, message: str, retry_after: int):
        super().__init__(message)
        self.cap = cap
        self.message = message
        self.retry_after = retry_after


@dataclass(frozen=True)
class Ticket:
    """A run counted against the widget's day caps, to give back if it does not succeed."""

    keys: tuple[str, ...]


def visitor_hash(address: str | None) -> str:
    """The visitor's address as the per-visitor cap counts it: the salted hash of the day
    that the site's allowance makes (IPv6 by /64); no cookie."""
    return allowance.address_hashes(address, "", clock.utc_day())[0]


def admit(embed: Embed, visitor: str) -> Ticket:
    """Count one run of ``visitor`` (``visitor_hash``) against the widget's caps: per minute,
    then the day's (per visitor and the widget's, both or neither). CapReached when over
    one, with nothing counted on the day's."""
    window = ratelimit.spend_minute(f"embed:{embed.id}", embed.per_minute)
    if not window.allowed:
        retry_after = max(1, int(window.reset_at - datetime.now(UTC).timestamp() + 0.999))
        raise CapReached(
            "per_minute",
            "This tool is busy right now: too many runs in the last minute. Try again in a minute.",
            retry_after,
        )
    day = clock.utc_day()
    widget_key, visitor_key = _counter_keys(day, embed.id, visitor)
    counters = [(widget_key, embed.daily), (visitor_key, embed.per_visitor_daily)]
    at_cap = allowance.reserve_counters(
        _state_key(day),
        counters,
        set_state=lambda: _set_state(day),
        seed=lambda key: allowance.store().seed(key, _count(key, day), _TTL_SECONDS),
    )
    if at_cap == 1:
        raise CapReached(
            "daily",
            "This tool has been used as much as it can be today. It works again tomorrow "
            "(from 00:00 UTC).",
            clock.seconds_to_midnight(),
        )
    if at_cap == 2:
        raise CapReached(
            "per_visitor_daily",
            f"You have reached this tool's limit of {embed.per_visitor_daily} "
            f"run{'s' if embed.per_visitor_daily != 1 else ''} a day per visitor. More "
            "tomorrow (from 00:00 UTC).",
            clock.seconds_to_midnight(),
        )
    return Ticket(tuple(key for key, _ in counters))


def release(ticket: Ticket) -> None:
    """Give a counted run back (it was refused or failed)."""
    allowance.store().release(list(ticket.keys))


def release_run(run: Run) -> None:
    """Give back the day's caps a queued run of a widget counted (it failed or was
    canceled: services/runs.py concludes it), as ``release`` gives back an inline run's."""
    if run.embed_id is None or run.web_address is None:
        return
    day = clock.utc_day(clock.as_utc(run.created_at))
    release(Ticket(_counter_keys(day, run.embed_id, run.web_address)))


def _counter_keys(day: str, embed_id: str, visitor: str) -> tuple[str, str]:
    return (f"embed:{day}:widget:{embed_id}", f"embed:{day}:visitor:{embed_id}:{visitor}")


def _state_key(day: str) -> str:
    return f"embed:{day}:state"


def day_bounds(day: str) -> tuple[datetime, datetime]:
    start = datetime.fromisoformat(day).replace(tzinfo=UTC)
    return start, start + timedelta(days=1)


def _set_state(day: str) -> None:
    """The day's state: "complete" when the database holds no widget run of the day (every
    counter starts at 0 in the store), else "partial" (a missing counter is counted again
    from the runs: the store lost it, or the process restarted)."""
    start, end = day_bounds(day)
    any_run = db.session.scalar(
        select(Run.id)
        .where(Run.embed_id.isnot(None), Run.created_at >= start, Run.created_at < end)
        .limit(1)
    )
    state = allowance.PARTIAL if any_run else allowance.COMPLETE
    allowance.store().seed(_state_key(day), state, _TTL_SECONDS)


def _count(key: str, day: str) -> int:
    """A day counter's value as the runs tell it (those that did not fail)."""
    _, _, kind, rest = key.split(":", 3)
    embed_id, _, visitor = rest.partition(":")
    start, end = day_bounds(day)
    query = select(func.count()).where(
        Run.embed_id == embed_id,
        Run.created_at >= start,
        Run.created_at < end,
        Run.status.notin_(("failed", "canceled")),
    )
    if kind == "visitor":
        query = query.where(Run.web_address == visitor)
    return db.session.scalar(query) or 0
