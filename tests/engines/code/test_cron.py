"""``code.cron`` (engines/code/cron.py), run through its catalogue tool."""

import pytest

from engines import EngineError


@pytest.mark.parametrize(
    "expression, description",
    [
        ("*/15 * * * *", "Every 15 minutes"),
        ("0 14 1 * *", "At 02:00 PM, on day 1 of the month"),
        ("0 9-17/2 * JAN-MAR MON-FRI", "Every 2 hours, between 09:00 AM and 05:59 PM, Monday "
         "through Friday, January through March"),
        ("0 0 * * MON#2", "At 12:00 AM, on the second Monday of the month"),
        ("0 0 L * *", "At 12:00 AM, on the last day of the month"),
    ],
)  # fmt: skip
def test_cron_expressions_are_explained(run, expression, description):
    assert run("cron-expression-explainer", expression=expression)["description"] == description


def test_cron_macros_are_expanded(run):
    assert run("cron-expression-explainer", expression="@weekly") == {
        "expression": "0 0 * * 0",
        "description": "At 12:00 AM, only on Sunday",
        "fields": {
            "minute": "0",
            "hour": "0",
            "day_of_month": "*",
            "month": "*",
            "day_of_week": "0",
        },
    }


def test_cron_times_can_use_24_hours(run):
    result = run("cron-expression-explainer", expression="0 14 * * *", use_24_hour_time=True)
    assert result["description"] == "At 14:00"


def test_cron_verbose_spells_out_every_day(run):
    result = run("cron-expression-explainer", expression="0 14 * * *", verbose=True)
    assert result["description"] == "At 02:00 PM, every day"


@pytest.mark.parametrize(
    "expression, message",
    [
        ("61 * * * *", "Minute: 61 is out of range 0-59."),
        ("0 24 * * *", "Hour: 24 is out of range 0-23."),
        ("0 0 32 * *", "Day of month: 32 is out of range 1-31."),
        ("0 0 * 13 *", "Month: 13 is out of range 1-12."),
        ("0 0 * * 8", "Day of week: 8 is out of range 0-7."),
        ("5-1 * * * *", "Minute: the range 5-1 runs backwards."),
        ("*/0 * * * *", "Minute: step 0 must be between 1 and 59."),
        ("x * * * *", "Minute: 'X' is not a valid value."),
        ("? * * * *", "Minute: '?' is only allowed for the day fields."),
        ("* * *", "A cron expression has 5 fields (minute, hour, day of month, month, day of "
         "week); this one has 3."),
        ("@reboot", "@reboot runs once when cron starts; it has no schedule to explain."),
        ("@often", "Unknown cron macro '@often'."),
    ],
)  # fmt: skip
def test_invalid_cron_expressions_are_refused_field_by_field(run, expression, message):
    with pytest.raises(EngineError) as caught:
        run("cron-expression-explainer", expression=expression)
    assert caught.value.message == message
