"""The account dashboard: today's usage per key as whoami reports it, the chart's figures
equal to the table's and both to a GROUP BY over the ledger (and the web runs), the filters
in the URL, the CSV export, who may see it."""

import csv
import io
import re
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
import sqlalchemy as sa
from flask import g
from lxml import html as lxml_html

from extensions import db
from services import accounts, clock, keys
from tests.helpers import auth

BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/124.0 Safari/537.36"
TOOL = "word-counter"


@pytest.fixture
def client(app):
    """A browser's test client (a same-origin Referer, as CSRF checks over HTTPS want)."""
    client = app.test_client()
    client.environ_base.update(
        {"HTTP_USER_AGENT": BROWSER, "HTTP_REFERER": "https://svc.test/account/"}
    )
    return client


def forget_request_state() -> None:
    """What one request left in ``g`` (the test's app context outlives it) is dropped."""
    for name in ("csrf_token", "_login_user", "membership", "memberships", "account"):
        g.pop(name, None)


def get(client, path: str, **headers):
    forget_request_state()
    return client.get(path, headers=headers)


def new_key(account, name: str = "key", **fields) -> tuple[str, str]:
    key, raw = keys.create_key(account, name)
    for field, value in fields.items():
        setattr(key, field, value)
    db.session.commit()
    return raw, key.id


def call(client, raw: str, text: str = "one two three") -> None:
    forget_request_state()
    answer = client.post("/v1/tools/run", headers=auth(raw), json={"slug": TOOL, "input": text})
    assert answer.status_code == 200, answer.get_json()


def web_run(client, text: str = "one two") -> None:
    page = get(client, f"/tools/{TOOL}/").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)[1]
    forget_request_state()
    answer = client.post(f"/tools/{TOOL}/", data={"csrf_token": token, "text": text})
    assert answer.status_code == 200, answer.get_data(as_text=True)[:400]


def ledger_group_by(account_id: int, metric: str = "calls") -> dict:
    """(day, source) → figure, as SQL of its own reads the ledger and the web runs."""
    db.session.rollback()
    if db.engine.dialect.name == "postgresql":
        day = "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
    else:
        day = "date(created_at)"
    figure = "count(*)" if metric == "calls" else "sum(credits)"
    ledger = db.session.execute(
        sa.text(
            f"SELECT {day}, CASE WHEN api_key_id IS NULL THEN 'web' ELSE 'api' END, {figure}"
            " FROM usage_events WHERE account_id = :account GROUP BY 1, 2"
        ),
        {"account": account_id},
    ).all()
    web_figure = "count(*)" if metric == "calls" else "0"
    web = db.session.execute(
        sa.text(
            f"SELECT {day}, 'web', {web_figure} FROM runs WHERE account_id = :account"
            " AND source = 'web' AND status = 'succeeded' AND workflow_run_id IS NULL"
            " GROUP BY 1"
        ),
        {"account": account_id},
    ).all()
    totals: dict = {}
    for on, source, value in [*ledger, *web]:
        totals[(str(on), source)] = totals.get((str(on), source), 0) + int(value)
    return {key: value for key, value in totals.items() if value}


def chart_figures(page) -> dict:
    document = lxml_html.fromstring(page.get_data(as_text=True))
    (svg,) = document.xpath("//figure[@class='usage-chart']/svg")
    assert svg.get("role") == "img"
    labelled = svg.get("aria-labelledby").split()
    assert [document.get_element_by_id(name).tag for name in labelled] == ["title", "desc"]
    return {
        (rect.get("data-day"), rect.get("data-source")): int(rect.get("data-value"))
        for rect in svg.xpath(".//rect")
    }


def table_figures(page) -> dict:
    document = lxml_html.fromstring(page.get_data(as_text=True))
    (table,) = document.xpath("//table[contains(@class, 'usage-days')]")
    headers = [th.text_content().strip() for th in table.xpath("./thead/tr/th")]
    figures = {}
    for row in table.xpath("./tbody/tr"):
        day = row.xpath("./th/time")[0].get("datetime")
        cells = [td.text_content().strip() for td in row.xpath("./td")]
        for header, cell in zip(headers[1:], cells, strict=True):
            if header != "Total":
                figures[(day, header.lower())] = int(cell)
    return figures


def nonzero(figures: dict) -> dict:
    return {key: value for key, value in figures.items() if value}


# --- who may see it ----------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/account/", "/account/usage.csv?days=7"])
def test_signed_out_visitors_are_sent_to_sign_in(client, path):
    answer = get(client, path)
    assert answer.status_code == 302
    target = urlsplit(answer.location)
    assert target.path == "/account/login" and parse_qs(target.query)["next"] == [path]


@pytest.mark.parametrize("role", ["owner", "admin", "member"])
def test_every_member_sees_the_whole_accounts_usage(app, client, sign_in, role):
    owner = sign_in("pro")
    raw, _ = new_key(owner.account, "owners key")
    call(client, raw)
    call(client, raw)
    if role != "owner":
        sign_in(role=role, account=owner.account)
    answer = get(client, "/account/")
    assert answer.status_code == 200
    assert nonzero(chart_figures(answer)) == {(clock.now().date().isoformat(), "api"): 2}
    assert "owners key" in answer.get_data(as_text=True)


# --- the chart, the table and the ledger -------------------------------------------------


@pytest.mark.parametrize("metric", ["calls", "credits"])
def test_the_chart_and_the_table_show_the_ledgers_figures(app, client, sign_in, metric):
    me = sign_in("pro")
    me.account.free_calls_used = 98  # two free calls left: credits differ from calls
    db.session.commit()
    first, _ = new_key(me.account, "first")
    second, _ = new_key(me.account, "second")
    clock.set_offset(timedelta(days=-3))
    for raw in (first, first, second):
        call(client, raw)
    web_run(client)
    clock.set_offset(timedelta(days=-1))
    call(client, second)
    clock.set_offset(timedelta(0))
    for raw in (first, second, second):
        call(client, raw)
    web_run(client)
    web_run(client)
    # Another account's usage is not this one's.
    theirs, _ = new_key(accounts.create_account("them@example.com", "pro"))
    call(client, theirs)

    answer = get(client, f"/account/?metric={metric}")
    assert answer.status_code == 200
    expected = ledger_group_by(me.account.id, metric)
    # Three days, API and web apart (web runs cost no credits).
    assert len(expected) == (5 if metric == "calls" else 3)
    assert nonzero(chart_figures(answer)) == expected
    assert table_figures(answer) == chart_figures(answer)  # zeros included: every day
    assert len(chart_figures(answer)) == 30 * 2


# --- today, live ------------------------------------------------------------------------


def test_today_per_key_is_what_whoami_reports(app, client, sign_in):
    me = sign_in("pro")
    me.account.free_calls_used = 97
    db.session.commit()
    busy, _ = new_key(me.account, "busy")
    quiet, _ = new_key(me.account, "quiet", daily_override=50)
    for _ in range(4):
        call(client, busy)
    forget_request_state()
    whoami = client.get("/v1/public/whoami", headers=auth(busy)).get_json()["usage"]
    page = get(client, "/account/")
    document = lxml_html.fromstring(page.get_data(as_text=True))
    rows = {
        row.xpath("./th")[0].text.strip(): [td.text_content().strip() for td in row.xpath("./td")]
        for row in document.xpath("//table[contains(@class, 'today-keys')]/tbody/tr")
    }
    assert rows["busy"] == [
        str(whoami["calls_today"]),
        f"{whoami['remaining_today']} of 1000",
        str(whoami["credits_today"]),
    ]
    assert rows["busy"] == ["4", "996 of 1000", "1"]  # three free calls, then one credit
    assert rows["quiet"] == ["0", "50 of 50", "0"]
    text = " ".join(page.get_data(as_text=True).split())
    # The account's own count (whoami's may lag by its key cache's few seconds).
    assert "Free calls left</dt><dd>0 of the account's first 100" in text


def test_a_revoked_key_leaves_today_but_keeps_its_history(app, client, sign_in):
    me = sign_in("pro")
    raw, key_id = new_key(me.account, "old")
    call(client, raw)
    keys.revoke_key(db.session.get(keys.ApiKey, key_id))
    db.session.commit()
    page = get(client, "/account/").get_data(as_text=True)
    assert "today-keys" not in page and "no working API key" in page
    assert "old (" in page and " — revoked" in page  # still a filter choice
    assert nonzero(chart_figures(get(client, f"/account/?key={key_id}"))) == {
        (clock.now().date().isoformat(), "api"): 1
    }


# --- filters ----------------------------------------------------------------------------


def test_filters_narrow_the_chart_and_the_table_alike(app, client, sign_in):
    me = sign_in("pro")
    first, first_id = new_key(me.account, "first")
    second, second_id = new_key(me.account, "second")
    clock.set_offset(timedelta(days=-10))
    call(client, first)
    clock.set_offset(timedelta(0))
    call(client, first)
    call(client, second)
    call(client, second)
    web_run(client)
    today = clock.now().date().isoformat()
    ten_days_ago = (clock.now().date() - timedelta(days=10)).isoformat()

    def shown(query: str) -> dict:
        answer = get(client, f"/account/?{query}")
        assert answer.status_code == 200
        assert table_figures(answer) == chart_figures(answer)
        return nonzero(chart_figures(answer))

    assert shown("") == {(ten_days_ago, "api"): 1, (today, "api"): 3, (today, "web"): 1}
    assert shown(f"key={second_id}") == {(today, "api"): 2}
    assert shown(f"key={first_id}") == {(ten_days_ago, "api"): 1, (today, "api"): 1}
    assert shown("source=web") == {(today, "web"): 1}
    assert shown("source=api&days=7") == {(today, "api"): 3}
    assert len(chart_figures(get(client, "/account/?days=7&source=api"))) == 7
    # Each key's total over the period, the site's web runs as a row of their own.
    document = lxml_html.fromstring(get(client, "/account/").get_data(as_text=True))
    by_key = {
        row.xpath("./th")[0].text.strip() + "/" + row.xpath("./td")[0].text_content(): row.xpath(
            "./td"
        )[1].text_content()
        for row in document.xpath("//table[contains(@class,'usage-keys')]/tbody/tr")
    }
    assert by_key == {"first/API": "2", "second/API": "2", "On the site/Web": "1"}


def test_htmx_gets_the_figures_alone(app, client, sign_in):
    sign_in("pro")
    answer = get(client, "/account/?days=7", **{"HX-Request": "true"})
    html = answer.get_data(as_text=True)
    assert answer.status_code == 200 and "<html" not in html and "usage-chart" in html
    assert 'hx-swap-oob="innerHTML:#usage-status"' in html
    assert "HX-Request" in answer.headers["Vary"]
    restoring = {"HX-Request": "true", "HX-History-Restore-Request": "true"}
    restored = get(client, "/account/?days=7", **restoring)
    assert "<html" in restored.get_data(as_text=True)


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ("days=90", "days", "Choose 7 or 30 days."),
        ("metric=dollars", "metric", "Choose calls or credits."),
        ("source=fax", "source", "Choose API or web, or both."),
        ("key=someone-elses", "key", "This account has no such key."),
    ],
)
def test_a_bad_filter_is_refused_beside_it(app, client, sign_in, query, field, message):
    sign_in("pro")
    answer = get(client, f"/account/?{query}")
    assert answer.status_code == 400
    document = lxml_html.fromstring(answer.get_data(as_text=True))
    (error,) = document.xpath(f"//*[@id='f-{field}-error']")
    assert error.text_content() == message
    assert document.xpath(f"//select[@id='f-{field}']")[0].get("aria-describedby") == (
        f"f-{field}-error"
    )
    # The page still shows the usage, with that filter at its default.
    assert len(chart_figures(answer)) in (30, 60)
    csv_answer = get(client, f"/account/usage.csv?{query}")
    assert csv_answer.status_code == 400 and message in csv_answer.get_data(as_text=True)


def test_another_accounts_key_is_no_filter_here(app, client, sign_in):
    theirs = keys.create_key(accounts.create_account("other@example.com", "pro"), "theirs")[0]
    db.session.commit()
    sign_in("pro")
    assert get(client, f"/account/?key={theirs.id}").status_code == 400
    assert get(client, f"/account/usage.csv?key={theirs.id}").status_code == 400


# --- CSV --------------------------------------------------------------------------------


def test_the_csv_holds_the_rollups_with_the_same_filters(app, client, sign_in):
    me = sign_in("pro")
    me.account.free_calls_used = 100  # its calls cost credits
    raw, key_id = new_key(me.account, "=HYPERLINK(evil)")
    other, other_id = new_key(me.account, "other")
    call(client, raw)
    call(client, raw)
    call(client, other)
    web_run(client)
    today = clock.now().date().isoformat()
    answer = get(client, "/account/usage.csv")
    assert answer.status_code == 200
    assert answer.mimetype == "text/csv"
    assert answer.headers["Content-Disposition"].startswith('attachment; filename="usage-')
    rows = list(csv.DictReader(io.StringIO(answer.get_data(as_text=True))))
    assert sorted((r["key_id"], r["key_name"], r["source"], r["calls"]) for r in rows) == sorted(
        [
            (key_id, "'=HYPERLINK(evil)", "api", "2"),
            (other_id, "other", "api", "1"),
            ("", "", "web", "1"),
        ]
    )
    assert {r["day"] for r in rows} == {today}
    filtered = get(client, f"/account/usage.csv?key={other_id}&days=7")
    (only,) = csv.DictReader(io.StringIO(filtered.get_data(as_text=True)))
    assert (only["key_id"], only["calls"], only["credits"]) == (other_id, "1", "1")
    # The dashboard links to the CSV with its own filters.
    page = get(client, f"/account/?key={other_id}&days=7").get_data(as_text=True)
    assert f'href="/account/usage.csv?key={other_id}&amp;days=7"' in page
