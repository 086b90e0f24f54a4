"""Dates and times (convert.datetime): timestamps, zones, durations, date arithmetic, cron."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

from engines.base import ChoiceEngine, EngineError
from engines.convert._helpers import _parse_datetime, _round, _split_list, _zone


def _moment(value: datetime) -> dict[str, Any]:
    """One moment as the date tools describe it."""
    iso_year, iso_week, _ = value.isocalendar()
    return {
        "datetime": value.isoformat(),
        "utc_offset": _offset_text(value),
        "abbreviation": value.tzname(),
        "weekday": value.strftime("%A"),
        "iso_week": f"{iso_year}-W{iso_week:02d}",
        "day_of_year": value.timetuple().tm_yday,
    }


def _offset_text(value: datetime) -> str:
    offset = value.utcoffset() or timedelta(0)
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


_UNIT_SCALES = {"seconds": 1, "milliseconds": 10**3, "microseconds": 10**6,
                "nanoseconds": 10**9}  # fmt: skip


def _timestamp(inputs: dict[str, Any]) -> dict[str, Any]:
    from decimal import Decimal, InvalidOperation

    text = inputs["value"].strip()
    zone = _zone(inputs["timezone"])
    unit = inputs["unit"]
    try:
        number = Decimal(text)
    except InvalidOperation:
        number = None
    if number is not None and number.is_finite():
        if unit == "auto":
            size = abs(number)
            unit = (
                "seconds"
                if size < 10**11
                else "milliseconds"
                if size < 10**14
                else "microseconds"
                if size < 10**17
                else "nanoseconds"
            )
        seconds = number / _UNIT_SCALES[unit]
        try:
            moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=float(seconds))
        except OverflowError:
            raise EngineError(f"{text} {unit} is outside the years 1 to 9999.") from None
    else:
        moment = _parse_datetime(text, inputs["timezone"])
        unit = None
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    delta = moment - epoch
    micros = (delta.days * 86_400 + delta.seconds) * 10**6 + delta.microseconds
    local = moment.astimezone(zone)
    return {
        "unix_seconds": _round(micros / 10**6, 16),
        "unix_milliseconds": micros // 1000,
        "utc": moment.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "local": _moment(local),
        "rfc_2822": local.strftime("%a, %d %b %Y %H:%M:%S ") + _offset_text(local).replace(":", ""),
        "detected_unit": unit,
    }


def _timezone_convert(inputs: dict[str, Any]) -> dict[str, Any]:
    source = _parse_datetime(inputs["datetime"], inputs["from_zone"])
    zones = _split_list(inputs["to_zones"], 25, "time zones")
    if not zones:
        raise EngineError("Give at least one time zone to convert to.")
    conversions = []
    for name in zones:
        local = source.astimezone(_zone(name))
        day_shift = (local.date() - source.date()).days
        conversions.append(
            {"zone": name, **_moment(local), "day_shift": day_shift, "dst": bool(local.dst())}
        )
    return {"source": _moment(source), "conversions": conversions}


_DURATION_RE = re.compile(
    r"(?P<sign>[-+])?P(?!$)(?:(?P<years>\d+(?:[.,]\d+)?)Y)?(?:(?P<months>\d+(?:[.,]\d+)?)M)?"
    r"(?:(?P<weeks>\d+(?:[.,]\d+)?)W)?(?:(?P<days>\d+(?:[.,]\d+)?)D)?"
    r"(?:T(?=\d)(?:(?P<hours>\d+(?:[.,]\d+)?)H)?(?:(?P<minutes>\d+(?:[.,]\d+)?)M)?"
    r"(?:(?P<seconds>\d+(?:[.,]\d+)?)S)?)?",
    re.IGNORECASE,
)
_DURATION_FIELDS = ("years", "months", "weeks", "days", "hours", "minutes", "seconds")
_FIELD_SECONDS = {"weeks": 604_800, "days": 86_400, "hours": 3_600, "minutes": 60, "seconds": 1}
# Average Gregorian lengths, for an approximate total when years or months are involved.
_AVERAGE_SECONDS = {"years": 31_556_952, "months": 2_629_746}


def _parse_duration(text: str) -> tuple[int, dict[str, float | int]]:
    """An ISO 8601 duration as (sign, fields); ``-P1D`` and decimal fractions are accepted."""
    match = _DURATION_RE.fullmatch(text.strip())
    if not match:
        raise EngineError(
            f"'{text.strip()}' is not an ISO 8601 duration such as P1Y2M10DT2H30M, PT90M or P2W."
        )
    fields: dict[str, float | int] = {}
    for name in _DURATION_FIELDS:
        raw = match.group(name)
        value = float(raw.replace(",", ".")) if raw else 0
        fields[name] = int(value) if float(value).is_integer() else value
    return (-1 if match.group("sign") == "-" else 1), fields


def _duration_text(sign: int, fields: dict[str, float | int]) -> str:
    def number(value: float | int) -> str:
        return str(int(value)) if float(value).is_integer() else f"{value:g}"

    date_part = "".join(
        f"{number(fields[n])}{n[0].upper()}" for n in _DURATION_FIELDS[:4] if fields[n]
    )
    time_part = "".join(
        f"{number(fields[n])}{n[0].upper()}" for n in _DURATION_FIELDS[4:] if fields[n]
    )
    text = "P" + date_part + (f"T{time_part}" if time_part else "")
    return ("-" if sign < 0 else "") + (text if text != "P" else "PT0S")


def _duration_words(sign: int, fields: dict[str, float | int]) -> str:
    parts = []
    for name in _DURATION_FIELDS:
        value = fields[name]
        if value:
            unit = name if value != 1 else name[:-1]
            parts.append(f"{value:g} {unit}")
    words = ", ".join(parts) if parts else "0 seconds"
    return f"minus {words}" if sign < 0 else words


def _duration(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["duration"].strip()
    if re.fullmatch(r"[-+]?\d+(\.\d+)?", text):
        total = float(text)
        if abs(total) > 10**12:
            raise EngineError("Give at most 10^12 seconds (about 31,700 years).")
        sign, remaining = (-1 if total < 0 else 1), abs(total)
        fields: dict[str, float | int] = dict.fromkeys(_DURATION_FIELDS, 0)
        for name in ("days", "hours", "minutes"):
            fields[name], remaining = (
                int(remaining // _FIELD_SECONDS[name]),
                remaining % _FIELD_SECONDS[name],
            )
        fields["seconds"] = _round(remaining, 12)
        if not inputs["use_days"]:
            fields["hours"] += fields.pop("days") * 24
            fields["days"] = 0
    else:
        sign, fields = _parse_duration(text)
    exact = sum(fields[n] * _FIELD_SECONDS[n] for n in _FIELD_SECONDS)
    calendar = fields["years"] or fields["months"]
    approximate = exact + sum(fields[n] * _AVERAGE_SECONDS[n] for n in _AVERAGE_SECONDS)
    return {
        "iso": _duration_text(sign, fields),
        "components": {name: sign * fields[name] for name in _DURATION_FIELDS},
        "total_seconds": None if calendar else _round(sign * exact, 15),
        "approximate_total_seconds": _round(sign * approximate, 15),
        "description": _duration_words(sign, fields),
    }


def _add_months(value: datetime, months: int) -> datetime:
    """``value`` moved by whole months, the day clamped to the month's end (Jan 31 + 1M: Feb 28)."""
    import calendar

    index = value.year * 12 + value.month - 1 + months
    year, month = divmod(index, 12)
    if not 1 <= year <= 9999:
        raise EngineError("The result falls outside the years 1 to 9999.")
    day = min(value.day, calendar.monthrange(year, month + 1)[1])
    return value.replace(year=year, month=month + 1, day=day)


def _holidays(text: str) -> set[date]:
    days = set()
    for item in _split_list(text, 1000, "holidays"):
        try:
            days.add(date.fromisoformat(item))
        except ValueError:
            raise EngineError(f"Holiday '{item}' is not a date like 2025-12-25.") from None
    return days


def _business_days(start: date, end: date, holidays: set[date]) -> int:
    """Weekdays from ``start`` (included) to ``end`` (excluded) that are not holidays."""
    if end <= start:
        return -_business_days(end, start, holidays) if end < start else 0
    days = (end - start).days
    weeks, extra = divmod(days, 7)
    count = weeks * 5 + sum(1 for i in range(extra) if (start.weekday() + i) % 7 < 5)
    return count - sum(1 for d in holidays if start <= d < end and d.weekday() < 5)


def _date_difference(inputs: dict[str, Any]) -> dict[str, Any]:
    start = _parse_datetime(inputs["start"], inputs["timezone"])
    end = _parse_datetime(inputs["end"], inputs["timezone"])
    sign = -1 if end < start else 1
    early, late = (start, end) if sign > 0 else (end, start)
    months = (late.year - early.year) * 12 + late.month - early.month
    anchor = _add_months(early, months)
    if anchor > late:
        months -= 1
        anchor = _add_months(early, months)
    rest = late - anchor
    delta = late - early
    return {
        "total_days": _round(sign * delta.total_seconds() / 86_400, 12),
        "total_seconds": _round(sign * delta.total_seconds(), 15),
        "weeks_and_days": {"weeks": sign * (delta.days // 7), "days": sign * (delta.days % 7)},
        "calendar": {
            "years": sign * (months // 12),
            "months": sign * (months % 12),
            "days": sign * rest.days,
            "hours": sign * (rest.seconds // 3600),
            "minutes": sign * (rest.seconds % 3600 // 60),
            "seconds": sign * (rest.seconds % 60),
        },
        "business_days": _business_days(start.date(), end.date(), _holidays(inputs["holidays"])),
    }


def _add_business_days(start: date, count: int, holidays: set[date]) -> date:
    step = 1 if count >= 0 else -1
    day, left = start, abs(count)
    while left:
        day += timedelta(days=step)
        if day.weekday() < 5 and day not in holidays:
            left -= 1
    return day


def _date_add(inputs: dict[str, Any]) -> dict[str, Any]:
    start = _parse_datetime(inputs["start"], inputs["timezone"])
    sign, fields = _parse_duration(inputs["duration"])
    if inputs["subtract"]:
        sign = -sign
    if not float(fields["years"]).is_integer() or not float(fields["months"]).is_integer():
        raise EngineError("Years and months must be whole numbers to add them to a date.")
    try:
        result = _add_months(start, sign * int(fields["years"] * 12 + fields["months"]))
        result += sign * timedelta(**{n: fields[n] for n in _FIELD_SECONDS})
        if inputs["business_days"]:
            shifted = _add_business_days(
                result.date(), inputs["business_days"], _holidays(inputs["holidays"])
            )
            result = result + timedelta(days=(shifted - result.date()).days)
    except OverflowError:
        raise EngineError("The result falls outside the years 1 to 9999.") from None
    return {**_moment(result), "days_from_start": (result.date() - start.date()).days}


_MAX_CRON_RUNS = 50


def _cron_runs(inputs: dict[str, Any]) -> dict[str, Any]:
    from croniter import CroniterBadCronError, CroniterBadDateError, CroniterError, croniter

    expression = " ".join(inputs["expression"].split())
    zone = _zone(inputs["timezone"])
    start = (
        _parse_datetime(inputs["start"], inputs["timezone"])
        if inputs["start"]
        else (datetime.now(zone))
    )
    if len(expression.split()) != 5 and not expression.startswith("@"):
        raise EngineError(
            "Give a 5-field cron expression (minute hour day-of-month month day-of-week), such "
            "as */15 9-17 * * 1-5."
        )
    try:
        schedule = croniter(expression, start.astimezone(zone))
        runs = [schedule.get_next(datetime) for _ in range(inputs["count"])]
    except CroniterBadDateError:
        raise EngineError("The expression never matches a real date (e.g. 30 February).") from None
    except (CroniterBadCronError, CroniterError, ValueError) as error:
        raise EngineError(f"Invalid cron expression: {error}.") from None
    return {
        "expression": expression,
        "timezone": inputs["timezone"].strip(),
        "runs": [run.isoformat() for run in runs],
    }


class DateTimeEngine(ChoiceEngine):
    """Timestamps, time zones, date arithmetic, ISO 8601 durations and cron schedules."""

    name = "convert.datetime"
    requires = ("croniter",)
    jobs = {
        "timestamp": _timestamp,
        "timezone": _timezone_convert,
        "difference": _date_difference,
        "add": _date_add,
        "duration": _duration,
        "cron-runs": _cron_runs,
    }
