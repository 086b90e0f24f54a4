"""What the account dashboard shows of usage: today's figures per key, live (the quota's
counters, as ``/v1/public/whoami`` reads them), and the calls and credits per day of the
last 7 or 30 days, per key and source, read from the daily rollups (``usage_daily``,
services/usage_rollup.py), never from the ledger.

The filters come from the page's URL (``?key=<id>&source=api|web&days=7|30&metric=calls|
credits``); ``read_filters`` checks them and says what is wrong with a value it refuses.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from sqlalchemy import select

from extensions import db
from models import Account, ApiKey, UsageDaily
from services import allowance, clock, quota, usage
from services.allowance import Visitor
from services.plans import PlanInfo
from services.usage_rollup import SOURCES, WEB_KEY

DAYS = (7, 30)
METRICS = ("calls", "credits")
SOURCE_NAMES = {"api": "API", "mcp": "MCP", "web": "Web"}


@dataclass(frozen=True)
class Filters:
    """What the usage shown is narrowed to: ``key_id`` one key of the account (None: all),
    ``source`` api, mcp or web (None: all), the last ``days`` days, the ``metric`` charted."""

    days: int = 30
    metric: str = "calls"
    source: str | None = None
    key_id: str | None = None

    def query(self) -> dict[str, str]:
        """The filters as the URL carries them (defaults left out)."""
        args = {"key": self.key_id, "source": self.source}
        args |= {"days": str(self.days) if self.days != 30 else None}
        args |= {"metric": self.metric if self.metric != "calls" else None}
        return {name: value for name, value in args.items() if value}

    @property
    def sources(self) -> tuple[str, ...]:
        return (self.source,) if self.source else SOURCES


def read_filters(args, keys: list[ApiKey]) -> tuple[Filters, dict[str, str]]:
    """The filters in ``args`` (a request's query), and a message per refused value (that
    filter then keeps its default). ``keys``: the account's keys, the ones ``key`` names."""
    errors: dict[str, str] = {}
    values: dict = {}
    days = args.get("days", "").strip()
    if days:
        if days in {str(n) for n in DAYS}:
            values["days"] = int(days)
        else:
            errors["days"] = "Choose 7 or 30 days."
    metric = args.get("metric", "").strip()
    if metric:
        if metric in METRICS:
            values["metric"] = metric
        else:
            errors["metric"] = "Choose calls or credits."
    source = args.get("source", "").strip()
    if source:
        if source in SOURCES:
            values["source"] = source
        else:
            errors["source"] = "Choose API or web, or both."
    key_id = args.get("key", "").strip()
    if key_id:
        if any(key.id == key_id for key in keys):
            values["key_id"] = key_id
        else:
            errors["key"] = "This account has no such key."
    return Filters(**values), errors


# --- today, live ----------------------------------------------------------------------


@dataclass(frozen=True)
class KeyToday:
    key: ApiKey
    calls: int
    credits: int
    limit: int  # the key's daily quota
    remaining: int


@dataclass(frozen=True)
class Today:
    day: date
    resets_at: datetime
    keys: list[KeyToday]
    free_calls_left: int | None  # None: a plan without API calls
    web: allowance.Allowance


def today(account: Account, plan: PlanInfo, keys: list[ApiKey]) -> Today:
    """Today's usage of each working key (the quota's counters: what whoami reports), the
    account's free calls left and its web runs of the day."""
    now = clock.now()
    shown = []
    for key in keys:
        if not _working(key, now):
            continue
        limit = key.daily_override if key.daily_override is not None else plan.daily_quota
        if key.sandbox:  # sandbox calls count against no quota
            shown.append(KeyToday(key, 0, 0, limit, limit))
            continue
        figures = quota.store().usage(key.id, now)
        shown.append(
            KeyToday(key, figures.calls, figures.credits, limit, max(0, limit - figures.calls))
        )
    web = allowance.current(Visitor("", "", "", account_id=account.id, plan=plan), now)
    return Today(
        day=now.date(),
        resets_at=clock.next_midnight(now),
        keys=shown,
        free_calls_left=usage.free_calls_remaining(account.free_calls_used)
        if plan.api_access
        else None,
        web=web,
    )


def _working(key: ApiKey, now: datetime) -> bool:
    expires = clock.as_utc(key.expires_at)
    return key.revoked_at is None or (expires is not None and expires > now)


def account_keys(account_id: int) -> list[ApiKey]:
    """Every key of the account, working ones first, then by name."""
    keys = db.session.scalars(select(ApiKey).where(ApiKey.account_id == account_id)).all()
    return sorted(keys, key=lambda key: (key.revoked_at is not None, key.name.lower(), key.id))


# --- the last days, from the rollups ----------------------------------------------------


@dataclass(frozen=True)
class DayFigures:
    """One day's figure of the charted metric, per source."""

    day: date
    by_source: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.by_source.values())


@dataclass(frozen=True)
class KeyFigures:
    """One key's (or the site's) usage over the days shown."""

    key_id: str
    name: str
    hint: str
    source: str
    calls: int
    credits: int
    free_calls: int


@dataclass
class History:
    filters: Filters
    first_day: date
    last_day: date
    days: list[DayFigures]
    by_key: list[KeyFigures]
    rows: list[UsageDaily] = field(repr=False)

    @property
    def totals(self) -> dict[str, int]:
        return {
            "calls": sum(k.calls for k in self.by_key),
            "credits": sum(k.credits for k in self.by_key),
            "free_calls": sum(k.free_calls for k in self.by_key),
        }

    @property
    def peak(self) -> int:
        return max((day.total for day in self.days), default=0)


def history(account_id: int, filters: Filters, keys: list[ApiKey]) -> History:
    """The usage of the last ``filters.days`` UTC days (today included), as the rollups hold
    it: the charted metric per day and source (every day, none left out), and the
    calls, credits and free calls per key."""
    last = clock.now().date()
    first = last - timedelta(days=filters.days - 1)
    query = (
        select(UsageDaily)
        .where(UsageDaily.account_id == account_id, UsageDaily.day >= first)
        .where(UsageDaily.day <= last)
        .order_by(UsageDaily.day, UsageDaily.source, UsageDaily.api_key_id)
    )
    if filters.source:
        query = query.where(UsageDaily.source == filters.source)
    if filters.key_id:
        query = query.where(UsageDaily.api_key_id == filters.key_id)
    rows = list(db.session.scalars(query))
    # MCP has its column once an account has used it in these days (or asked for it alone).
    used = {row.source for row in rows}
    sources = [s for s in filters.sources if s != "mcp" or "mcp" in used or filters.source]
    per_day = {first + timedelta(days=n): dict.fromkeys(sources, 0)
               for n in range(filters.days)}  # fmt: skip
    per_key: dict[tuple[str, str], list[int]] = {}
    for row in rows:
        per_day[row.day][row.source] += getattr(row, filters.metric)
        figures = per_key.setdefault((row.api_key_id, row.source), [0, 0, 0])
        figures[0] += row.calls
        figures[1] += row.credits
        figures[2] += row.free_calls
    names = {key.id: key for key in keys}
    by_key = []
    for (key_id, source), (calls, credits, free) in per_key.items():
        key = names.get(key_id)
        if key_id == WEB_KEY:
            name, hint = "On the site", ""
        else:
            name = key.name if key is not None else "A deleted key"
            hint = key.hint if key is not None else ""
        by_key.append(KeyFigures(key_id, name, hint, source, calls, credits, free))
    by_key.sort(key=lambda k: (-k.calls, k.name.lower(), k.key_id, k.source))
    return History(
        filters=filters,
        first_day=first,
        last_day=last,
        days=[DayFigures(day, figures) for day, figures in per_day.items()],
        by_key=by_key,
        rows=rows,
    )


CSV_COLUMNS = ("day", "key_id", "key_name", "source", "calls", "credits", "free_calls")


def as_csv(found: History, keys: list[ApiKey]) -> str:
    """The rollup rows behind ``found``, one per day, key and source (days without usage
    have none), with the key's name beside its id."""
    names = {key.id: key.name for key in keys}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for row in found.rows:
        name = "" if row.api_key_id == WEB_KEY else names.get(row.api_key_id, "")
        writer.writerow(
            [
                row.day.isoformat(),
                row.api_key_id,
                _csv_safe(name),
                row.source,
                row.calls,
                row.credits,
                row.free_calls,
            ]
        )
    return out.getvalue()


def _csv_safe(text: str) -> str:
    """A name a spreadsheet will not read as a formula (=, +, - or @ first)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
