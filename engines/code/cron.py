"""``code.cron``: a cron expression checked field by field and explained in English."""

from __future__ import annotations

import re
from typing import Any

from engines.base import Engine, EngineError

_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
_DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
# (field name, output key, lowest, highest, names)
_CRON_FIELDS = (
    ("Minute", "minute", 0, 59, []),
    ("Hour", "hour", 0, 23, []),
    ("Day of month", "day_of_month", 1, 31, []),
    ("Month", "month", 1, 12, _MONTHS),
    ("Day of week", "day_of_week", 0, 7, _DAYS),
)
_CRON_ITEM_RE = re.compile(r"^(?P<base>\*|\?|[A-Z0-9]+(?:-[A-Z0-9]+)?)(?:/(?P<step>\d+))?$")


def _cron_value(token: str, label: str, low: int, high: int, names: list[str]) -> int:
    if token in names:
        return names.index(token) + (1 if label == "Month" else 0)
    if not token.isdigit():
        raise EngineError(f"{label}: '{token}' is not a valid value.")
    value = int(token)
    if not low <= value <= high:
        raise EngineError(f"{label}: {value} is out of range {low}-{high}.")
    return value


def _check_cron_field(field: str, label: str, low: int, high: int, names: list[str]) -> None:
    for item in field.split(","):
        # Quartz extensions cron_descriptor understands: L, LW, 15W, 5L, 5#3.
        if label == "Day of month" and re.fullmatch(r"L|LW|L-\d{1,2}|\d{1,2}W", item):
            continue
        if label == "Day of week" and re.fullmatch(r"[0-7]L|[0-7]#[1-5]|[A-Z]{3}(L|#[1-5])", item):
            continue
        match = _CRON_ITEM_RE.match(item)
        if not match:
            raise EngineError(f"{label}: '{item}' is not a valid value.")
        base, step = match.group("base"), match.group("step")
        if base == "?" and label not in ("Day of month", "Day of week"):
            raise EngineError(f"{label}: '?' is only allowed for the day fields.")
        if base not in ("*", "?"):
            bounds = [_cron_value(t, label, low, high, names) for t in base.split("-")]
            if len(bounds) == 2 and bounds[0] > bounds[1]:
                raise EngineError(f"{label}: the range {base} runs backwards.")
        if step is not None and not 1 <= int(step) <= high:
            raise EngineError(f"{label}: step {step} must be between 1 and {high}.")


class CronExplainEngine(Engine):
    name = "code.cron"
    requires = ("cron_descriptor",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        from cron_descriptor import (
            CasingTypeEnum,
            DescriptionTypeEnum,
            ExpressionDescriptor,
            FormatException,
            Options,
        )

        raw = " ".join(inputs["expression"].split())
        expression = _MACROS.get(raw.lower(), raw).upper()
        if expression == "@REBOOT":
            raise EngineError("@reboot runs once when cron starts; it has no schedule to explain.")
        if expression.startswith("@"):
            raise EngineError(f"Unknown cron macro '{raw}'.")
        fields = expression.split(" ")
        if len(fields) != 5:
            raise EngineError(
                "A cron expression has 5 fields (minute, hour, day of month, month, day of "
                f"week); this one has {len(fields)}."
            )
        for field, (label, _key, low, high, names) in zip(fields, _CRON_FIELDS, strict=True):
            _check_cron_field(field, label, low, high, names)
        options = Options(
            CasingTypeEnum.Sentence,
            verbose=inputs["verbose"],
            use_24hour_time_format=inputs["use_24_hour_time"],
            locale_code="en_US",
        )
        try:
            description = ExpressionDescriptor(expression, options).get_description(
                DescriptionTypeEnum.FULL
            )
        except FormatException as error:
            raise EngineError(f"Invalid cron expression: {error}") from None
        return {
            "expression": expression,
            "description": description,
            "fields": {spec[1]: value for value, spec in zip(fields, _CRON_FIELDS, strict=True)},
        }
