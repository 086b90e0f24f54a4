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
    return (moment or now()).strftime("%Y-%m-%d")


def next_midnight(moment: datetime | None = None) -> datetime:
    moment = moment or now()
    return (moment + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)


def seconds_to_midnight(moment: datetime | None = None) -> int:
    moment = moment or now()
    return max(1, int((next_midnight(moment) - moment).total_seconds() + 0.999))


def as_utc(value: datetime | None) -> datetime | None:
    """SQLite hands timestamps back without a zone; they were stored as UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)
