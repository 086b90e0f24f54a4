"""The dates and times engine (convert.datetime), run through its catalogue tools."""

import pytest

from engines import EngineError


def test_timestamp_from_a_date_and_unknown_zone(run):
    out = run("unix-timestamp-converter", value="2000-01-01T00:00:00+01:00")
    assert (out["unix_seconds"], out["utc"], out["detected_unit"]) == (
        946681200,
        "1999-12-31T23:00:00Z",
        None,
    )
    with pytest.raises(EngineError, match="Unknown time zone 'Mars/Base'"):
        run("unix-timestamp-converter", value="0", timezone="Mars/Base")
    with pytest.raises(EngineError, match="outside the years 1 to 9999"):
        run("unix-timestamp-converter", value="1e30", unit="seconds")


def test_time_zone_conversion_across_the_date_line_and_a_dst_gap(run):
    out = run("time-zone-converter", datetime="2025-01-01T23:30", to_zones="Pacific/Kiritimati")
    assert out["conversions"][0]["day_shift"] == 1
    with pytest.raises(EngineError, match="does not exist in Europe/Paris"):
        run("time-zone-converter", datetime="2025-03-30T02:30", from_zone="Europe/Paris")


def test_date_difference_backwards_and_month_end(run):
    out = run("date-difference-calculator", start="2024-03-31", end="2024-02-29")
    assert out["calendar"]["months"] == -1 and out["calendar"]["days"] == -2
    assert out["total_days"] == -31
    assert out["business_days"] == -22


def test_date_add_subtracting_and_fractional_months(run):
    out = run("date-calculator", start="2024-03-31T10:00", duration="P1M", subtract=True)
    assert out["datetime"] == "2024-02-29T10:00:00+00:00"
    with pytest.raises(EngineError, match="must be whole numbers"):
        run("date-calculator", start="2024-01-01", duration="P1.5M")


def test_duration_from_seconds_and_calendar_durations(run):
    out = run("iso-duration-converter", duration="93784", use_days=False)
    assert (out["iso"], out["total_seconds"]) == ("PT26H3M4S", 93784)
    months = run("iso-duration-converter", duration="-P1Y2M")
    assert months["total_seconds"] is None and months["description"] == "minus 1 year, 2 months"
    with pytest.raises(EngineError, match="is not an ISO 8601 duration"):
        run("iso-duration-converter", duration="PT")


def test_cron_runs_cross_a_dst_change_and_refuse_impossible_dates(run):
    out = run(
        "cron-next-run-times",
        expression="0 1 * * *",
        start="2025-03-29T12:00",
        timezone="Europe/Paris",
        count=2,
    )
    assert out["runs"] == ["2025-03-30T01:00:00+01:00", "2025-03-31T01:00:00+02:00"]
    with pytest.raises(EngineError, match="never matches a real date"):
        run("cron-next-run-times", expression="0 0 30 2 *", start="2025-01-01")
    with pytest.raises(EngineError, match="Invalid cron expression"):
        run("cron-next-run-times", expression="61 * * * *", start="2025-01-01")
