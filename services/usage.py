"""Credits: the usage ledger and the first free calls of a paid account."""

from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select, update

from extensions import db
from models import Account, Run, UsageEvent
from services.keys import KeyContext

FREE_CALLS = 100


def likely_free(context: KeyContext) -> bool:
    """A guess from the cached key (the count only grows, so "not free" is always right)."""
    return context.free_calls_used < FREE_CALLS


def claim_free_call(account_id: int) -> bool:
    """Atomically use one of the account's free calls; False when none are left."""
    result = db.session.execute(
        update(Account)
        .where(Account.id == account_id, Account.free_calls_used < FREE_CALLS)
        .values(free_calls_used=Account.free_calls_used + 1)
    )
    return result.rowcount == 1


def ledger_row(
    account_id: int,
    key_id: str | None,
    tool_slug: str,
    run_id: str,
    credits: int,
    free_call: bool,
    moment,
    source: str | None = None,
) -> dict:
    """The ledger row of one successful invocation (the caller records it). ``source``: mcp
    for a call of the MCP endpoint; else it follows from the key (api, or web without one)."""
    return {
        "source": source if source == "mcp" else ("api" if key_id else "web"),
        "account_id": account_id,
        "api_key_id": key_id,
        "run_id": run_id,
        "tool_slug": tool_slug,
        "credits": credits,
        "free_call": free_call,
        "created_at": moment,
    }


def free_calls_remaining(account_free_calls_used: int) -> int:
    return max(0, FREE_CALLS - account_free_calls_used)


# Runs that hold a quota reservation until they end (a workflow's steps are reserved when the
# workflow starts, ``pending`` ones included).
_RESERVED_STATES = ("pending", "queued", "running")


def day_totals(key_id: str, day: str) -> tuple[int, int]:
    """What the database knows of ``key_id``'s quota on the UTC ``day`` (YYYY-MM-DD): the
    calls, as the day's counter counts them, and their credits.

    A call is counted on the day its run was created: the day's successful runs (their
    ledger rows) and the runs still holding a reservation. The quota's counters are rebuilt
    from this when Redis has lost them (services/quota.py). What it cannot see: inline runs
    in flight at that moment, whose rows are not written yet."""
    start = datetime.fromisoformat(day).replace(tzinfo=UTC)
    end = start + timedelta(days=1)
    calls, credits = db.session.execute(
        select(func.count(), func.coalesce(func.sum(UsageEvent.credits), 0))
        .select_from(UsageEvent)
        .join(Run, Run.id == UsageEvent.run_id)
        .where(
            UsageEvent.api_key_id == key_id,
            # The ledger row is written when the run ends, at or after it was created.
            UsageEvent.created_at >= start,
            UsageEvent.created_at < end + timedelta(days=1),
            Run.created_at >= start,
            Run.created_at < end,
        )
    ).one()
    reserved = db.session.scalar(
        select(func.count())
        .select_from(Run)
        .where(
            Run.api_key_id == key_id,
            Run.created_at >= start,
            Run.created_at < end,
            Run.status.in_(_RESERVED_STATES),
            Run.sandbox.is_(False),
        )
    )
    return int(calls) + int(reserved), int(credits)
