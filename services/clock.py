"""The one source of "now" for quota windows and timestamps, so tests can move time."""

from datetime import UTC, datetime, timedelta

_offset = timedelta(0)


def now() -> datetime:
    return datetime.now(UTC) + _offset


def set_offset(offset: timedelta) -> None:
    """Shift this process's clock (tests only)."""
    global _offset
    _offset = offset


def utc_day(moment: datetime | None = None) -> str:
    # date().isoformat() is YYYY-MM-DD, as strftime("%Y-%m-%d") but a tenth of its cost
    # (every request that spends a limit asks).
    return (moment or now()).date().isoformat()


def next_midnight(moment: datetime | None = None) -> datetime:
    moment = moment or now()
    return (moment + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)


def seconds_to_midnight(moment: datetime | None = None) -> int:
    """Whole seconds until the next 00:00, rounded up (at least 1)."""
    moment = moment or now()
    elapsed = moment.hour * 3600 + moment.minute * 60 + moment.second
    left = _DAY - elapsed - moment.microsecond / 1_000_000
    return max(1, int(left + 0.999))


_DAY = 24 * 3600


def as_utc(value: datetime | None) -> datetime | None:
    """SQLite hands timestamps back without a zone; they were stored as UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)
