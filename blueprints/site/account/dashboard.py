"""The account dashboard (``/account/``): the plan and today's usage per key, live, then the
calls or credits per day of the last 7 or 30 days, web and API apart, as a chart drawn on
the server (SVG) with the same figures in a table beneath it, per key, and as CSV
(``/account/usage.csv``). Filters live in the URL. Every member sees the whole account's
usage (docs/architecture/site.md). Read from the daily rollups, never from the ledger."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from flask import g, make_response, render_template, request

from blueprints.site.access import member_required
from blueprints.site.routes import bp
from services import usage_dashboard
from services.plans import get_plan
from services.usage_dashboard import SOURCE_NAMES, History

_IN_PROSE = {"api": "API", "mcp": "MCP", "web": "web"}
# The chart's drawing box (the SVG scales to the page's width).
WIDTH, HEIGHT = 720, 260
LEFT, RIGHT, TOP, BOTTOM = 64, 32, 16, 38


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    day: date
    source: str
    value: int
    label: str


@dataclass(frozen=True)
class Tick:
    at: float
    label: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    y_ticks: list[Tick]
    x_ticks: list[Tick]
    title: str
    description: str
    plot_left: int
    plot_right: int
    baseline: float
    sources: tuple[str, ...]


def day_label(day: date) -> str:
    return f"{day.day} {day:%b}"


def unit(metric: str, value: int) -> str:
    if metric == "credits":
        return "credit" if value == 1 else "credits"
    return "call" if value == 1 else "calls"


def _scale_top(peak: int) -> tuple[int, int]:
    """A round top for the axis (at least ``peak``) and its step: four steps of 1, 2 or 5
    times a power of ten."""
    magnitude = 1
    while True:
        for factor in (1, 2, 5):
            step = factor * magnitude
            if step * 4 >= peak:
                return step * 4, step
        magnitude *= 10


def chart(found: History) -> Chart:
    """The bars of ``found``'s days, each source stacked on the API's, with their axes; every
    bar carries its day, source and figure (those of the table beneath)."""
    metric = found.filters.metric
    sources = tuple(found.days[0].by_source) if found.days else found.filters.sources
    top, step = _scale_top(max(found.peak, 1))
    plot_width = WIDTH - LEFT - RIGHT
    plot_height = HEIGHT - TOP - BOTTOM
    baseline = TOP + plot_height
    slot = plot_width / len(found.days)
    bar_width = round(slot * 0.7, 2)
    bars = []
    for index, day in enumerate(found.days):
        x = round(LEFT + index * slot + (slot - bar_width) / 2, 2)
        stacked = 0.0
        for source in sources:
            value = day.by_source.get(source, 0)
            height = round(value / top * plot_height, 2)
            label = f"{day_label(day.day)}: {value} {_IN_PROSE[source]} {unit(metric, value)}"
            top_y = round(baseline - stacked - height, 2)
            bars.append(Bar(x, top_y, bar_width, height, day.day, source, value, label))
            stacked += height
    y_ticks = [
        Tick(round(baseline - n * step / top * plot_height, 2), str(n * step)) for n in range(5)
    ]
    every = 1 if len(found.days) <= 7 else 5
    last = len(found.days) - 1
    x_ticks = [
        Tick(round(LEFT + index * slot + slot / 2, 2), day_label(day.day))
        for index, day in enumerate(found.days)
        if (last - index) % every == 0
    ]
    kinds = " and ".join(_IN_PROSE[s] for s in sources)
    title = f"{metric.capitalize()} per day, {kinds}"
    total = sum(day.total for day in found.days)
    busiest = max(found.days, key=lambda day: day.total)
    description = (
        f"{metric.capitalize()} per UTC day from {day_label(found.first_day)} to "
        f"{day_label(found.last_day)} {found.last_day.year}"
        + (", API and web stacked" if len(sources) > 1 else f", {kinds} only")
        + f": {total} {unit(metric, total)} in all"
        + (f", the most on {day_label(busiest.day)} ({busiest.total})." if total else ".")
        + " The table below lists every figure."
    )
    return Chart(WIDTH, HEIGHT, bars, y_ticks, x_ticks, title, description, LEFT,
                 WIDTH - RIGHT, baseline, sources)  # fmt: skip


def _usage_context(found: History, errors: dict, keys: list) -> dict:
    query = found.filters.query()
    return {
        "history": found,
        "filters": found.filters,
        "errors": errors,
        "keys": keys,
        "chart": chart(found),
        "query": query,
        "source_names": SOURCE_NAMES,
        "unit": unit,
        "day_label": day_label,
    }


def wants_fragment() -> bool:
    """Whether htmx asks for the page's changing part alone (not to restore a page from
    history, nor a boosted link: those get the whole page)."""
    headers = request.headers
    return (
        headers.get("HX-Request") == "true"
        and headers.get("HX-History-Restore-Request") != "true"
        and headers.get("HX-Boosted") != "true"
    )


def fragment_aware(response):
    """An account page's answer: it differs by the htmx headers, and is never cached."""
    for header in ("HX-Request", "HX-History-Restore-Request", "HX-Boosted"):
        response.vary.add(header)
    response.headers["Cache-Control"] = "private, no-store"
    return response


@bp.get("/account/")
@member_required()
def dashboard():
    """The account's plan, today's usage per key, and the last days' usage (filtered)."""
    account = g.account
    keys = usage_dashboard.account_keys(account.id)
    filters, errors = usage_dashboard.read_filters(request.args, keys)
    found = usage_dashboard.history(account.id, filters, keys)
    context = _usage_context(found, errors, keys)
    status = 400 if errors else 200
    if wants_fragment():
        body = render_template("site/account/partials/usage.html", fragment=True, **context)
    else:
        plan = get_plan(account.plan_name)
        today = usage_dashboard.today(account, plan, keys)
        body = render_template("site/account/dashboard.html", plan=plan, today=today, **context)
    return fragment_aware(make_response(body, status))


@bp.get("/account/usage.csv")
@member_required()
def usage_csv():
    """The usage shown on the dashboard (same filters) as CSV: a row per day, key and source."""
    account = g.account
    keys = usage_dashboard.account_keys(account.id)
    filters, errors = usage_dashboard.read_filters(request.args, keys)
    if errors:
        text = "".join(f"{name}: {message}\n" for name, message in errors.items())
        return make_response(text, 400, {"Content-Type": "text/plain; charset=utf-8"})
    found = usage_dashboard.history(account.id, filters, keys)
    name = f"usage-{found.first_day.isoformat()}-{found.last_day.isoformat()}.csv"
    response = make_response(usage_dashboard.as_csv(found, keys))
    response.headers["Content-Type"] = "text/csv; charset=utf-8"
    response.headers["Content-Disposition"] = f'attachment; filename="{name}"'
    response.headers["Cache-Control"] = "private, no-store"
    return response
