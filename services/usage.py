"""Credits: the usage ledger and the first free calls of a paid account."""

from sqlalchemy import insert, update

from extensions import db
from models import Account, UsageEvent
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
) -> dict:
    """The ledger row of one successful invocation (the caller records it)."""
    return {
        "account_id": account_id,
        "api_key_id": key_id,
        "run_id": run_id,
        "tool_slug": tool_slug,
        "credits": credits,
        "free_call": free_call,
        "created_at": moment,
    }


def record(row: dict) -> None:
    """Write a ledger row in the session's transaction now."""
    db.session.execute(insert(UsageEvent.__table__), row)


def free_calls_remaining(account_free_calls_used: int) -> int:
    return max(0, FREE_CALLS - account_free_calls_used)
