"""The account dashboard and run history in a real browser: a Pro user signed up through the
site makes a key on the keys page, runs tools through the API and on the site, and the
dashboard's chart and table agree with each other and with the ledger in the server's
database; the filters change the figures in place and in the address; the run history
lists the runs, a run's page runs it again prefilled; a workflow started from its page
shows live progress and is canceled; axe-core finds nothing serious on these pages.
``SITE_SCREENSHOTS=<folder>`` adds screenshots at 375 and 1280 px, light and dark."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import requests
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.conftest import Site, Visitor

BLOCKING = {"serious", "critical"}
RAW_KEY = re.compile(r"svc_[A-Za-z0-9]{40}")
WORKFLOW = "review-insights"


def _create_key(visitor: Visitor, name: str) -> str:
    page = visitor.page
    visitor.goto("/account/api-keys/")
    page.get_by_label("Name").fill(name)
    page.get_by_role("radio", name=re.compile(r"Live:")).check()
    page.get_by_role("button", name="Create key").click()
    shown = page.locator("#shown-secret-value")
    expect(shown).to_be_visible()
    raw = shown.inner_text().strip()
    assert RAW_KEY.fullmatch(raw)
    return raw


def _api_run(site: Site, raw: str, slug: str, text: str) -> str:
    answer = requests.post(
        f"{site.url}/v1/tools/run",
        headers={"X-SVC-API-Key": raw},
        json={"slug": slug, "input": text},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["run_id"]


def _account_id(site: Site, email: str) -> int:
    ((account_id,),) = site.query(
        "SELECT m.account_id FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = ?",
        email,
    )
    return account_id


def _ledger(site: Site, account_id: int, metric: str) -> dict:
    """(day, source) → figure, read from the server's ledger and web runs."""
    figure = "count(*)" if metric == "calls" else "sum(credits)"
    totals: dict = {}
    rows = site.query(
        f"SELECT date(created_at), CASE WHEN api_key_id IS NULL THEN 'web' ELSE 'api' END,"
        f" {figure} FROM usage_events WHERE account_id = ? GROUP BY 1, 2",
        account_id,
    )
    if metric == "calls":
        rows += site.query(
            "SELECT date(created_at), 'web', count(*) FROM runs WHERE account_id = ?"
            " AND source = 'web' AND status = 'succeeded' AND workflow_run_id IS NULL"
            " GROUP BY 1",
            account_id,
        )
    for day, source, value in rows:
        totals[(day, source)] = totals.get((day, source), 0) + value
    return {key: value for key, value in totals.items() if value}


def _chart(page) -> dict:
    bars = page.locator("figure.usage-chart svg rect").evaluate_all(
        "rects => rects.map(r => [r.dataset.day, r.dataset.source, Number(r.dataset.value)])"
    )
    return {(day, source): value for day, source, value in bars}


def _table(page) -> dict:
    headers = page.locator("table.usage-days thead th").all_inner_texts()
    figures = {}
    for row in page.locator("table.usage-days tbody tr").all():
        day = row.locator("th time").get_attribute("datetime")
        for header, cell in zip(headers[1:], row.locator("td").all_inner_texts(), strict=True):
            if header != "Total":
                figures[(day, header.lower())] = int(cell)
    return figures


def _nonzero(figures: dict) -> dict:
    return {key: value for key, value in figures.items() if value}


def _axe(page, found: dict, label: str) -> None:
    blocking = [v for v in Axe().run(page).response["violations"] if v["impact"] in BLOCKING]
    if blocking:
        found[label] = [f"{v['id']}: {v['help']} ({len(v['nodes'])})" for v in blocking]


def test_the_dashboard_agrees_with_the_ledger_and_the_history_runs_again(
    visitor, site, signed_up_user
):
    user = signed_up_user(visitor, plan="pro")
    account_id = _account_id(site, user.email)
    page = visitor.page
    laptop = _create_key(visitor, "laptop")
    server = _create_key(visitor, "server")
    first = _api_run(site, laptop, "word-counter", "One two three.")
    _api_run(site, laptop, "word-counter", "Four five.")
    _api_run(site, server, "json-formatter", '{"b": 1, "a": [1, 2]}')
    # A run on the site, signed in: web usage of the account.
    visitor.goto("/tools/word-counter/")
    page.fill("#field-text", "Typed on the site.")
    page.get_by_role("button", name="Run Word Counter").click()
    expect(page.locator("#run-result h2")).to_have_text("Result")

    found: dict = {}
    visitor.goto("/account/")
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    page.wait_for_load_state("load")
    chart = _chart(page)
    assert len(chart) == 60  # 30 days, API and web
    assert _table(page) == chart
    assert _nonzero(chart) == _ledger(site, account_id, "calls")
    assert sum(_nonzero(chart).values()) == 4
    today = page.locator("table.today-keys tbody tr", has_text="laptop").locator("td")
    expect(today.nth(0)).to_have_text("2")
    expect(today.nth(1)).to_have_text("998 of 1000")
    _axe(page, found, "dashboard")

    # The chart's select changes the figures in place, and the address.
    page.get_by_label("Chart").select_option("credits")
    expect(page).to_have_url(re.compile(r"/account/\?metric=credits$"))
    expect(page.locator("#chart-title")).to_have_text(re.compile(r"^Credits per day"))
    assert _table(page) == _chart(page)
    assert _nonzero(_chart(page)) == _ledger(site, account_id, "credits")
    page.get_by_label("Period").select_option("7")
    page.get_by_label("Source").select_option("api")
    expect(page).to_have_url(re.compile(r"/account/\?source=api&days=7&metric=credits$"))
    expect(page.locator("table.usage-days tbody tr")).to_have_count(7)
    assert _table(page) == _chart(page)
    page.go_back()  # history restores the whole page
    expect(page.get_by_label("Period")).to_have_value("7")
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()

    # The run history: every run, newest first; a run's page runs it again prefilled.
    page.get_by_role("navigation", name="Account").get_by_role("link", name="Runs").click()
    page.wait_for_load_state("load")  # htmx is set up
    expect(page.locator("table.run-list tbody tr")).to_have_count(4)
    page.get_by_label("Source").select_option("api")
    expect(page).to_have_url(re.compile(r"/account/runs/\?source=api$"))
    expect(page.locator("table.run-list tbody tr")).to_have_count(3)
    _axe(page, found, "runs")
    visitor.goto(f"/account/runs/{first}/")
    expect(page.locator("#run-status")).to_contain_text("Succeeded")
    expect(page.locator(".run-input")).to_contain_text("One two three.")
    _axe(page, found, "run")
    page.get_by_role("button", name="Run again").click()
    expect(page).to_have_url(re.compile(rf"/tools/word-counter/\?from_run={first}$"))
    expect(page.locator("#field-text")).to_have_value("One two three.")
    assert not found, found


def test_a_workflow_started_on_its_page_shows_progress_and_cancels(visitor, site, signed_up_user):
    signed_up_user(visitor, plan="pro")
    page = visitor.page
    found: dict = {}
    visitor.goto(f"/workflows/{WORKFLOW}/")
    page.get_by_label("Input text").fill(
        "Love the app, but sync fails every few days.\nGreat support."
    )
    _axe(page, found, "workflow page")
    page.get_by_role("button", name=re.compile(r"^Start ")).click()
    expect(page).to_have_url(re.compile(r"/account/runs/[0-9a-f-]{36}/$"))
    status = page.get_by_role("status").filter(has=page.locator("#run-progress"))
    expect(status).to_contain_text(re.compile(r"\d of 3 steps done"))
    # The first step (sentiment, a local engine) ends while the page polls.
    expect(status).to_contain_text(re.compile(r"[123] of 3 steps done"), timeout=30_000)
    _axe(page, found, "workflow run")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Cancel run").click()
    expect(status).to_contain_text(re.compile(r"Canceled|Succeeded"))
    expect(page.get_by_role("button", name="Cancel run")).to_have_count(0)
    page.reload()
    expect(page.locator("#run-progress")).not_to_have_attribute("hx-get", re.compile("."))
    assert not found, found


@pytest.mark.skipif(not os.environ.get("SITE_SCREENSHOTS"), reason="SITE_SCREENSHOTS is not set")
@pytest.mark.parametrize("width", [375, 1280])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_screenshots(open_new_visitor, site, signed_up_user, width, scheme):
    """The dashboard, the run history and a run's page at ``width`` px in ``scheme``."""
    folder = Path(os.environ["SITE_SCREENSHOTS"])
    folder.mkdir(parents=True, exist_ok=True)
    visitor = open_new_visitor(
        f"shots-{width}-{scheme}",
        viewport={"width": width, "height": 900},
        color_scheme=scheme,
    )
    signed_up_user(visitor, plan="pro")
    page = visitor.page
    raw = _create_key(visitor, "laptop")
    run_id = _api_run(site, raw, "word-counter", "One two three four.")
    for text in ("a b", "c d e", "f"):
        _api_run(site, raw, "word-counter", text)
    visitor.goto("/account/")
    page.screenshot(path=str(folder / f"dashboard-{width}-{scheme}.png"), full_page=True)
    visitor.goto("/account/runs/")
    page.screenshot(path=str(folder / f"runs-{width}-{scheme}.png"), full_page=True)
    visitor.goto(f"/account/runs/{run_id}/")
    page.screenshot(path=str(folder / f"run-{width}-{scheme}.png"), full_page=True)
    visitor.goto(f"/workflows/{WORKFLOW}/")
    page.locator("#start").screenshot(path=str(folder / f"workflow-start-{width}-{scheme}.png"))
