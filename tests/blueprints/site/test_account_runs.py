"""The account's run history: web and API runs with filters in the URL, keyset pages, a
run's page (input, output, run again prefilled), workflows started from the site with live
step progress and cancel, and who may see what (another account's run: 404)."""

import re
import time
from urllib.parse import parse_qs, urlsplit

import pytest
import sqlalchemy as sa
from flask import g
from lxml import html as lxml_html

from extensions import db
from jobs.workflows import run_step_job
from models import Run, UsageDaily, UsageEvent, WorkflowRun
from services import accounts, keys, workflows
from tests.helpers import auth

BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/124.0 Safari/537.36"
TOOL = "word-counter"
WORKFLOW = "review-insights"  # three text steps (the fake model provider answers them)
REVIEW = "Great app. Sync fails every day, though."


@pytest.fixture
def app_settings(fake_provider):
    """``app``'s model provider, for workflow steps: ``fake_provider``."""
    return {"AI_BASE_URL": fake_provider.base_url, "AI_TIMEOUT_SECONDS": 5.0}


@pytest.fixture
def client(app):
    client = app.test_client()
    client.environ_base.update(
        {"HTTP_USER_AGENT": BROWSER, "HTTP_REFERER": "https://svc.test/account/runs/"}
    )
    return client


def forget_request_state() -> None:
    for name in ("csrf_token", "_login_user", "membership", "memberships", "account"):
        g.pop(name, None)


def get(client, path: str, **headers):
    forget_request_state()
    return client.get(path, headers=headers)


def csrf(client, path: str) -> str:
    page = get(client, path).get_data(as_text=True)
    return re.search(r'name="csrf_token" value="([^"]+)"', page)[1]


def post(client, path: str, data: dict, *, page: str, **kwargs):
    token = csrf(client, page)
    forget_request_state()
    return client.post(path, data={"csrf_token": token, **data}, **kwargs)


def new_key(account, name: str = "key") -> tuple[str, str]:
    key, raw = keys.create_key(account, name)
    db.session.commit()
    return raw, key.id


def api_run(client, raw: str, text: str = "one two three", slug: str = TOOL) -> str:
    forget_request_state()
    answer = client.post("/v1/tools/run", headers=auth(raw), json={"slug": slug, "input": text})
    assert answer.status_code in (200, 422), answer.get_json()
    return answer.get_json().get("run_id") or answer.get_json()["run_id"]


def web_run(client, text: str) -> None:
    answer = post(client, f"/tools/{TOOL}/", {"text": text}, page=f"/tools/{TOOL}/")
    assert answer.status_code == 200


def listed(page) -> list[tuple[str, str]]:
    """The history's rows: (run page path, status), top to bottom."""
    document = lxml_html.fromstring(page.get_data(as_text=True))
    rows = document.xpath("//table[contains(@class, 'run-list')]/tbody/tr")
    return [
        (row.xpath(".//th/a")[0].get("href"), row.xpath("./td[2]")[0].text_content().strip())
        for row in rows
    ]


def run_ids(page) -> list[str]:
    return [href.split("/")[3] for href, _ in listed(page)]


def drive(workflow_run_id: str, seconds: float = 60) -> WorkflowRun:
    """Run the workflow's queued steps here, one job after the other, until it ends."""
    deadline = time.monotonic() + seconds
    first = True
    while time.monotonic() < deadline:
        db.session.rollback()
        run = db.session.get(WorkflowRun, workflow_run_id)
        if run.status in {"succeeded", "failed", "canceled"}:
            return run
        for step in workflows.step_runs(run.id):
            if step.status == "queued":
                run_step_job(step.id, workflow_run_id, first)
        first = False
    pytest.fail("the workflow run did not end")


def start_workflow(client, text: str = REVIEW, workflow_id: str = WORKFLOW, page: str = ""):
    """Send the workflow page's form (its CSRF token from ``page``, else that page)."""
    page = page or f"/workflows/{workflow_id}/"
    return post(client, f"/workflows/{workflow_id}/run", {"input": text}, page=page)


# --- who may see what --------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/account/runs/", "/account/runs/00000000-0000-7000-8000-000000000000/"]
)
def test_signed_out_visitors_are_sent_to_sign_in(client, path):
    answer = get(client, path)
    assert answer.status_code == 302
    target = urlsplit(answer.location)
    assert target.path == "/account/login" and parse_qs(target.query)["next"] == [path]


def test_starting_a_workflow_signed_out_asks_to_sign_in_and_starts_nothing(client):
    forget_request_state()
    answer = client.post(f"/workflows/{WORKFLOW}/run", data={"input": REVIEW})
    assert answer.status_code in (302, 400)  # to sign in (or refused without a CSRF token)
    assert db.session.scalar(sa.select(sa.func.count()).select_from(WorkflowRun)) == 0


def test_another_accounts_run_is_404_everywhere(app, client, sign_in):
    theirs_account = accounts.create_account("them@example.com", "pro")
    db.session.commit()
    raw, _ = new_key(theirs_account)
    theirs = api_run(client, raw)
    sign_in("pro")
    for path in (
        f"/account/runs/{theirs}/",
        f"/account/runs/{theirs}/progress",
        "/account/runs/not-a-run/",
        f"/account/runs/{'x' * 80}/",
    ):
        assert get(client, path).status_code == 404, path
    cancel = post(client, f"/account/runs/{theirs}/cancel", {}, page="/account/runs/")
    assert cancel.status_code == 404
    # Nor does "run again" fill a form from it.
    page = get(client, f"/tools/{TOOL}/?from_run={theirs}").get_data(as_text=True)
    assert "one two three" not in page
    assert theirs not in get(client, "/account/runs/").get_data(as_text=True)


@pytest.mark.parametrize("role", ["admin", "member"])
def test_every_member_sees_the_accounts_runs(app, client, sign_in, role):
    owner = sign_in("pro")
    raw, _ = new_key(owner.account)
    run_id = api_run(client, raw)
    sign_in(role=role, account=owner.account)
    assert run_ids(get(client, "/account/runs/")) == [run_id]
    assert get(client, f"/account/runs/{run_id}/").status_code == 200


# --- the history ---------------------------------------------------------------------------


def test_web_and_api_runs_newest_first_with_filters_in_the_url(app, client, sign_in):
    me = sign_in("pro")
    first_raw, first_key = new_key(me.account, "first")
    second_raw, second_key = new_key(me.account, "second")
    a = api_run(client, first_raw, "alpha beta")
    b = api_run(client, second_raw, "gamma")
    failed = api_run(client, second_raw, "{not json", slug="json-formatter")
    web_run(client, "delta epsilon")
    db.session.rollback()
    web = db.session.scalar(sa.select(Run.id).where(Run.source == "web"))
    assert db.session.get(Run, web).user_id == me.user.id

    everything = get(client, "/account/runs/")
    assert everything.status_code == 200
    assert run_ids(everything) == [web, failed, b, a]
    assert listed(everything)[1][1] == "Failed"

    def only(query: str) -> list[str]:
        answer = get(client, f"/account/runs/?{query}")
        assert answer.status_code == 200
        return run_ids(answer)

    assert only("source=web") == [web]
    assert only("source=api") == [failed, b, a]
    assert only(f"key={second_key}") == [failed, b]
    assert only(f"key={first_key}&status=succeeded") == [a]
    assert only("status=failed") == [failed]
    assert only("tool=json-formatter") == [failed]
    assert only("tool=no-such-tool") == []
    # htmx asks for the list alone.
    fragment = get(client, "/account/runs/?source=web", **{"HX-Request": "true"})
    assert "<html" not in fragment.get_data(as_text=True) and run_ids(fragment) == [web]
    assert "HX-Request" in fragment.headers["Vary"]


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ("status=exploded", "status", "Choose one of the listed states."),
        ("source=fax", "source", "Choose API, web or widgets."),
        ("key=not-a-key-of-ours", "key", "This account has no such key."),
        (f"tool={'x' * 101}", "tool", "at most 100 characters"),
        ("before=00000000-0000-7000-8000-000000000000", "before", "That page of runs is gone"),
    ],
)
def test_a_bad_filter_is_refused_beside_it(app, client, sign_in, query, field, message):
    sign_in("pro")
    answer = get(client, f"/account/runs/?{query}")
    assert answer.status_code == 400
    html = answer.get_data(as_text=True)
    assert message in html
    if field != "before":
        assert f'aria-describedby="f-{field}-error"' in html


def test_pages_go_back_in_time_by_keyset(app, client, sign_in):
    me = sign_in("pro")
    raw, _ = new_key(me.account)
    made = [api_run(client, raw, f"run {n}") for n in range(30)]
    newest_first = list(reversed(made))
    first = get(client, "/account/runs/?source=api")
    assert run_ids(first) == newest_first[:25]
    older = lxml_html.fromstring(first.get_data(as_text=True)).xpath(
        "//nav[@aria-label='Pages of runs']//a[text()='Older runs']"
    )[0]
    query = parse_qs(urlsplit(older.get("href")).query)
    assert query == {"before": [newest_first[24]], "source": ["api"]}
    # A run made meanwhile does not shift the older page.
    api_run(client, raw, "newest")
    second = get(client, older.get("href"))
    assert run_ids(second) == newest_first[25:]
    assert "Older runs" not in second.get_data(as_text=True)
    assert "Newest runs" in second.get_data(as_text=True)


# --- a run's page ----------------------------------------------------------------------------


def test_a_runs_page_shows_its_input_and_output_and_runs_again_prefilled(app, client, sign_in):
    me = sign_in("pro")
    raw, _ = new_key(me.account, "laptop")
    run_id = api_run(client, raw, "The quick brown fox jumps")
    page = get(client, f"/account/runs/{run_id}/")
    assert page.status_code == 200
    document = lxml_html.fromstring(page.get_data(as_text=True))
    assert document.xpath("//h1")[0].text_content() == "Word Counter: run"
    assert (
        "The quick brown fox jumps"
        in document.xpath("//dl[contains(@class,'run-input')]")[0].text_content()
    )
    assert "laptop" in page.get_data(as_text=True)
    figures = {
        row.xpath("./th")[0].text_content(): row.xpath("./td")[0].text_content()
        for row in document.xpath("//table[@class='figures']//tr")
    }
    assert figures["Words"] == "5"
    (status,) = document.xpath("//*[@id='run-status']")
    assert status.get("role") == "status"
    again = document.xpath("//a[text()='Run again']")[0].get("href")
    assert again == f"/tools/{TOOL}/?from_run={run_id}"
    before = db.session.scalar(sa.select(sa.func.count()).select_from(Run))
    form = lxml_html.fromstring(get(client, again).get_data(as_text=True))
    assert form.xpath("//textarea[@name='text']")[0].text_content() == "The quick brown fox jumps"
    db.session.rollback()
    assert db.session.scalar(sa.select(sa.func.count()).select_from(Run)) == before  # nothing ran


def test_an_anonymous_visitor_runs_again_its_own_web_run_only(app, client):
    web_run(client, "mine alone")
    db.session.rollback()
    mine = db.session.scalar(sa.select(Run.id).where(Run.source == "web"))
    page = get(client, f"/tools/{TOOL}/?from_run={mine}").get_data(as_text=True)
    assert ">mine alone</textarea>" in page
    other = app.test_client()
    other.environ_base.update({"HTTP_USER_AGENT": BROWSER})
    forget_request_state()
    assert "mine alone" not in other.get(f"/tools/{TOOL}/?from_run={mine}").get_data(as_text=True)


# --- workflows from the site ---------------------------------------------------------------


def test_the_workflow_page_offers_the_form_to_pro_members_only(app, client, sign_in):
    def page() -> str:
        return " ".join(get(client, f"/workflows/{WORKFLOW}/").get_data(as_text=True).split())

    form = f'action="/workflows/{WORKFLOW}/run"'
    signed_out = page()
    assert "Sign in</a> with an account on the Pro plan or above" in signed_out
    assert form not in signed_out
    sign_in("starter")
    starter = page()
    assert "is on Starter" in starter and form not in starter
    sign_in("pro", role="member")
    pro = page()
    assert form in pro and '<label for="start-input">Input text</label>' in pro


def test_a_starter_account_cannot_start_a_workflow(app, client, sign_in):
    sign_in("starter")
    answer = start_workflow(client, page="/account/")  # its page has no form to send
    assert answer.status_code == 402
    assert "needs the Pro plan or above" in answer.get_data(as_text=True)
    assert db.session.scalar(sa.select(sa.func.count()).select_from(WorkflowRun)) == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [("   ", "Write the input first."), ("x" * 20001, "20000")],
    ids=["empty", "too-long"],
)
def test_a_bad_workflow_input_is_refused_beside_the_field(app, client, sign_in, text, message):
    sign_in("pro")
    answer = start_workflow(client, text)
    assert answer.status_code == 422
    html = answer.get_data(as_text=True)
    assert 'id="start-error"' in html and 'aria-invalid="true"' in html
    assert message in html
    assert db.session.scalar(sa.select(sa.func.count()).select_from(WorkflowRun)) == 0


def test_a_workflow_started_here_shows_live_progress_then_its_result(app, client, sign_in):
    me = sign_in("pro")
    me.account.free_calls_used = 100
    db.session.commit()
    answer = start_workflow(client)
    assert answer.status_code == 303
    run_id = answer.location.split("/")[3]
    assert answer.location == f"/account/runs/{run_id}/"
    run = db.session.get(WorkflowRun, run_id)
    assert run.account_id == me.account.id and run.api_key_id is None and run.input == REVIEW

    page = get(client, answer.location)
    document = lxml_html.fromstring(page.get_data(as_text=True))
    (status,) = document.xpath("//*[@id='run-status']")
    assert status.get("role") == "status"
    (poller,) = status.xpath(".//*[@id='run-progress']")
    assert poller.get("hx-trigger") == "load delay:1s" and poller.get("hx-swap") == "outerHTML"
    assert "0 of 3 steps done" in poller.text_content()
    assert document.xpath("//button[text()='Cancel run']")
    # A poll that saw the same state gets the sentence alone; one that did not, the steps too.
    same = get(client, poller.get("hx-get"), **{"HX-Request": "true"}).get_data(as_text=True)
    assert 'id="run-progress"' in same and "hx-swap-oob" not in same
    moved = get(client, f"/account/runs/{run_id}/progress?seen=x", **{"HX-Request": "true"})
    assert 'id="run-details" hx-swap-oob="true"' in moved.get_data(as_text=True)

    assert drive(run_id).status == "succeeded"
    done = lxml_html.fromstring(get(client, answer.location).get_data(as_text=True))
    progress = done.xpath("//*[@id='run-progress']")[0]
    assert progress.get("hx-get") is None  # polling stops
    assert "3 of 3 steps done" in progress.text_content() and "5 credits" in progress.text_content()
    assert done.xpath("//h2[text()='Result']")
    assert not done.xpath("//button[text()='Cancel run']")
    # Charged to the account, as web usage, without a key.
    db.session.rollback()
    ledger = db.session.scalars(sa.select(UsageEvent).where(UsageEvent.account_id == me.account.id))
    assert sorted((row.api_key_id, row.credits) for row in ledger) == [
        (None, 1),
        (None, 2),
        (None, 2),
    ]
    (rollup,) = db.session.scalars(sa.select(UsageDaily)).all()
    assert (rollup.source, rollup.api_key_id, rollup.calls, rollup.credits) == ("web", "", 3, 5)
    # Listed as a web workflow run; run again fills the workflow's form.
    assert run_ids(get(client, "/account/runs/?source=web")) == [run_id]
    again = done.xpath("//a[text()='Run again']")[0].get("href")
    assert again == f"/workflows/{WORKFLOW}/?from_run={run_id}#start"
    form = lxml_html.fromstring(get(client, again.split("#")[0]).get_data(as_text=True))
    assert form.xpath("//textarea[@id='start-input']")[0].text_content() == REVIEW


def test_cancel_stops_a_workflow_run_started_here(app, client, sign_in):
    sign_in("pro")
    run_id = start_workflow(client).location.split("/")[3]
    page = f"/account/runs/{run_id}/"
    answer = post(client, f"/account/runs/{run_id}/cancel", {}, page=page)
    assert answer.status_code == 303 and answer.location == page
    db.session.rollback()
    assert db.session.get(WorkflowRun, run_id).status == "canceled"
    assert {step.status for step in workflows.step_runs(run_id)} == {"canceled"}
    # Cancel again (htmx): nothing changes, the progress answers.
    again = post(
        client, f"/account/runs/{run_id}/cancel", {}, page=page, headers={"HX-Request": "true"}
    )
    assert again.status_code == 200 and "Canceled" in again.get_data(as_text=True)
    assert db.session.scalar(sa.select(sa.func.count()).select_from(UsageEvent)) == 0


def test_a_form_without_its_csrf_token_is_refused(app, client, sign_in):
    sign_in("pro")
    forget_request_state()
    answer = client.post(f"/workflows/{WORKFLOW}/run", data={"input": REVIEW})
    assert answer.status_code == 400
    assert db.session.scalar(sa.select(sa.func.count()).select_from(WorkflowRun)) == 0


def test_a_step_page_links_to_its_workflow_run(app, client, sign_in):
    sign_in("pro")
    run_id = start_workflow(client).location.split("/")[3]
    step = workflows.step_runs(run_id)[0]
    page = get(client, f"/account/runs/{step.id}/").get_data(as_text=True)
    assert f'href="/account/runs/{run_id}/">its workflow run</a>' in page
    assert "Cancel run" not in page


def test_a_run_answered_but_not_yet_written_has_its_page(app, client, sign_in, monkeypatch):
    """An inline run's rows are written in batches after its answer: its page is there at
    once, read from the recorder."""
    from services.recorder import RunRecorder

    idle = RunRecorder(app, delay=3600)
    idle._ensure_thread = lambda: None
    monkeypatch.setitem(app.extensions, "run_recorder", idle)
    me = sign_in("pro")
    raw, _ = new_key(me.account)
    run_id = api_run(client, raw, "not yet written")
    db.session.rollback()
    assert db.session.get(Run, run_id) is None
    page = get(client, f"/account/runs/{run_id}/")
    assert page.status_code == 200 and "not yet written" in page.get_data(as_text=True)
    idle.flush()
    assert run_ids(get(client, "/account/runs/")) == [run_id]


def test_a_runs_files_are_linked_as_the_api_links_them(app, client, sign_in):
    me = sign_in("pro")
    raw, _ = new_key(me.account)
    forget_request_state()
    answer = client.post(
        "/v1/tools/run", headers=auth(raw), json={"slug": "email-qr-code", "input": "a@b.example"}
    )
    assert answer.status_code == 200, answer.get_json()
    run_id = answer.get_json()["run_id"]
    (url,) = [
        value["url"]
        for value in answer.get_json()["output"].values()
        if isinstance(value, dict) and "url" in value
    ]
    document = lxml_html.fromstring(get(client, f"/account/runs/{run_id}/").get_data(as_text=True))
    assert [img.get("src") for img in document.xpath("//div[@class='output']//img")] == [url]
    forget_request_state()
    assert client.get(urlsplit(url).path).status_code == 200
