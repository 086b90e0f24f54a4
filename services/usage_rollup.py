"""The daily usage rollups (``usage_daily``): calls, credits and free calls per UTC day,
account, key and source, kept exact as the ledger is written so that the dashboard reads
30 days of an account without scanning the ledger.

Every place that inserts ledger rows (``usage_events``) or records a web run of an account
adds them here **in the same transaction**, and only the rows it actually inserted: the
recorder's batches insert with ON CONFLICT DO NOTHING (a journal entry replayed after its
rows were written inserts nothing), so they roll up what their INSERT ... RETURNING gave
back. A crash between the ledger and its rollup is therefore impossible, and a replay
counts nothing twice.

What counts where:
- a ledger row (a successful, charged invocation) counts one call, its credits and its free
  call on the UTC day of its ``created_at``, under its key and its source (``api``, or
  ``mcp`` for a call of the MCP endpoint); a ledger row without a key was charged on the
  site (a workflow a member started there: it belongs to the account, not to a key) and
  counts under key '' and source ``web``;
- a succeeded web run of an account (``runs.source`` web, ``account_id`` set, not a workflow
  step: those are charged, so their ledger rows count them) counts one call, no credits,
  under key '' and source ``web``, on the UTC day of its ``created_at``.

The upsert is ``INSERT ... ON CONFLICT DO UPDATE SET calls = usage_daily.calls +
excluded.calls ...`` (PostgreSQL and SQLite alike), its rows in key order so that two
transactions adding to the same rows take their locks in the same order.
"""

from collections.abc import Iterable
from datetime import UTC, date, datetime

from sqlalchemy import Connection
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from models import Run, UsageDaily

WEB_KEY = ""  # ``api_key_id`` of what was used on the site
SOURCES = ("api", "mcp", "web")

# The rollup's key: (account_id, day, api_key_id, source); its figures: calls, credits,
# free calls.
Key = tuple[int, date, str, str]

_TABLE = UsageDaily.__table__
# What the recorder's inserts hand back (RETURNING) for the rows they inserted.
LEDGER_RETURNING = ("account_id", "api_key_id", "created_at", "credits", "free_call", "source")
RUN_RETURNING = ("account_id", "created_at", "source", "status", "workflow_run_id")


def utc_day(moment: datetime) -> date:
    """The UTC day of a timestamp (SQLite hands them back without a zone: they are UTC)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.date()


def ledger_source(row: dict) -> str:
    """A ledger row's source (rows written before it had one: from their key)."""
    if not row.get("api_key_id"):
        return "web"
    return row.get("source") or "api"


def counts_as_web_run(run: dict) -> bool:
    """Whether a ``runs`` row is a web run of an account that the rollup counts itself."""
    return (
        run.get("source") == "web"
        and run.get("status") == "succeeded"
        and run.get("account_id") is not None
        and run.get("workflow_run_id") is None
    )


def tally(ledger: Iterable[dict] = (), web_runs: Iterable[dict] = ()) -> dict[Key, list[int]]:
    """The figures to add per rollup key: ``ledger`` rows, and the ``runs`` rows of which
    those that ``counts_as_web_run`` count (the others are skipped)."""
    totals: dict[Key, list[int]] = {}
    for row in ledger:
        key_id = row.get("api_key_id")
        key = (row["account_id"], utc_day(row["created_at"]), key_id or WEB_KEY,
               ledger_source(row))  # fmt: skip
        figures = totals.setdefault(key, [0, 0, 0])
        figures[0] += 1
        figures[1] += int(row["credits"])
        figures[2] += 1 if row["free_call"] else 0
    for row in web_runs:
        if counts_as_web_run(row):
            key = (row["account_id"], utc_day(row["created_at"]), WEB_KEY, "web")
            totals.setdefault(key, [0, 0, 0])[0] += 1
    return totals


def add(connection: Connection | Session, totals: dict[Key, list[int]]) -> None:
    """Add ``totals`` to the rollups, in the transaction of ``connection`` (a Connection or
    a Session: the caller commits)."""
    if not totals:
        return
    values = [
        {
            "account_id": account_id,
            "day": day,
            "api_key_id": key_id,
            "source": source,
            "calls": calls,
            "credits": credits,
            "free_calls": free,
        }  # fmt: skip
        for (account_id, day, key_id, source), (calls, credits, free) in sorted(totals.items())
    ]
    connection.execute(_upsert(_dialect(connection)), values)


def add_ledger(session: Session, row: dict) -> None:
    """Roll up one ledger row that ``session`` has just inserted."""
    add(session, tally(ledger=[row]))


def add_web_run(session: Session, run: Run) -> None:
    """Roll up a web run of an account that has just succeeded (a queued one, ended by its
    job in ``session``'s transaction)."""
    add(session, tally(web_runs=[_as_row(run)]))


def _as_row(run: Run) -> dict:
    return {name: getattr(run, name) for name in RUN_RETURNING}


def _dialect(connection: Connection | Session) -> str:
    # A (scoped) session answers get_bind; a Connection is its own bind.
    bind = connection.get_bind() if hasattr(connection, "get_bind") else connection
    return bind.dialect.name


def _upsert(dialect: str):
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(_TABLE)
    return statement.on_conflict_do_update(
        index_elements=[_TABLE.c.account_id, _TABLE.c.day, _TABLE.c.api_key_id, _TABLE.c.source],
        set_={
            "calls": _TABLE.c.calls + statement.excluded.calls,
            "credits": _TABLE.c.credits + statement.excluded.credits,
            "free_calls": _TABLE.c.free_calls + statement.excluded.free_calls,
        },
    )


# --- PostgreSQL: the recorder's one-statement batch ----------------------------------------


def pg_rollup_sql(ledger_cte: str | None, runs_cte: str | None) -> str:
    """The final statement of the recorder's batch on PostgreSQL: the rollups of the rows
    that the CTEs ``ledger_cte`` (the ledger's INSERT ... RETURNING ``LEDGER_RETURNING``)
    and ``runs_cte`` (the runs' INSERT ... RETURNING ``RUN_RETURNING``) inserted, added to
    ``usage_daily``. Rows skipped by ON CONFLICT DO NOTHING return nothing, so they count
    nothing."""
    parts = []
    if ledger_cte is not None:
        parts.append(
            "SELECT account_id, (created_at AT TIME ZONE 'UTC')::date AS day,"
            " COALESCE(api_key_id, '') AS api_key_id,"
            " CASE WHEN api_key_id IS NULL THEN 'web' ELSE source END AS source,"
            " 1 AS calls, credits, CASE WHEN free_call THEN 1 ELSE 0 END AS free_calls"
            f" FROM {ledger_cte}"
        )
    if runs_cte is not None:
        parts.append(
            "SELECT account_id, (created_at AT TIME ZONE 'UTC')::date AS day,"
            " '' AS api_key_id, 'web' AS source, 1 AS calls, 0 AS credits, 0 AS free_calls"
            f" FROM {runs_cte} WHERE source = 'web' AND status = 'succeeded'"
            " AND account_id IS NOT NULL AND workflow_run_id IS NULL"
        )
    return (
        "INSERT INTO usage_daily (account_id, day, api_key_id, source, calls, credits,"
        " free_calls) SELECT account_id, day, api_key_id, source, sum(calls), sum(credits),"
        f" sum(free_calls) FROM ({' UNION ALL '.join(parts)}) AS used"
        " GROUP BY account_id, day, api_key_id, source"
        " ORDER BY account_id, day, api_key_id, source"
        " ON CONFLICT (account_id, day, api_key_id, source) DO UPDATE SET"
        " calls = usage_daily.calls + excluded.calls,"
        " credits = usage_daily.credits + excluded.credits,"
        " free_calls = usage_daily.free_calls + excluded.free_calls"
    )
