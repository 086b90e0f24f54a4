"""A widget's queued runs and files (``/embed/<public id>/runs/<run id>``): a queued tool's
run goes from the widget's POST to its output through the same run path as the API's (its
status polled under a token bound to the widget and that run), a tool's files show inside
the widget, and every other run id or token gets the empty answer."""

from __future__ import annotations

import dataclasses
import itertools
import re
import time
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest

from blueprints.site.embed import EMPTY_BODY
from catalogue import load_catalogue
from engines import ProviderUnavailable
from extensions import db
from jobs.runs import run_tool_job
from models import Embed, Run, StoredFile, UsageEvent
from services import accounts, clock, embeds, keys, quota
from tests.blueprints.site import test_embed_widget as widget_test
from tests.blueprints.site.test_embed_widget import token_of
from tests.helpers import embedded_app_at

_emails = itertools.count(1)


def _agency():
    account = accounts.create_account(f"queued-agency{next(_emails)}@example.com", "agency")
    account.free_calls_used = 100
    key, _raw = keys.create_key(account, "widgets")
    db.session.commit()
    return account, key


def new_embed(agency, **values) -> Embed:
    account, key = agency
    return widget_test.new_embed((account, key, None), **values)


def post_run(client, embed: Embed, **data):
    token = token_of(client.get(f"/embed/{embed.public_id}").get_data(as_text=True))
    return client.post(f"/embed/{embed.public_id}", data={"token": token, **data})


class _Kept:
    """A queue that keeps what it is given: the test runs the job itself."""

    def __init__(self):
        self.jobs = []

    def enqueue(self, job, *args, **kwargs):
        self.jobs.append((job, args, kwargs))

    def finished(self, run_id):
        pass  # nobody waits for a widget's run


@pytest.fixture
def queued(monkeypatch):
    """The word counter declared ``queue: true`` (as model-backed tools are), and a queue
    whose jobs the test runs."""
    tool = dataclasses.replace(load_catalogue().get("word-counter"), queue=True)
    catalogue = load_catalogue()
    patched = dataclasses.replace(catalogue, tools={**catalogue.tools, tool.slug: tool})
    for module in ("services.embeds", "services.runs"):
        monkeypatch.setattr(f"{module}.load_catalogue", lambda: patched)
    kept = _Kept()
    monkeypatch.setattr("jobs.runs.dispatcher", lambda: kept)
    return kept


def _run_id(location: str) -> str:
    return urlsplit(location).path.rsplit("/", 1)[1]


def test_a_queued_run_goes_from_the_widgets_post_to_its_output(client, queued):
    agency = _agency()
    account, key = agency
    embed = new_embed(agency)
    answer = post_run(client, embed, text="one two three four")
    assert answer.status_code == 303
    location = answer.headers["Location"]
    assert location.startswith(f"/embed/{embed.public_id}/runs/")
    assert "Set-Cookie" not in answer.headers
    run_id = _run_id(location)
    (job, args, options) = queued.jobs[0]
    assert (job, args, options["job_id"]) == (run_tool_job, (run_id,), run_id)

    page = client.get(location)
    assert page.status_code == 200
    assert page.headers["Content-Security-Policy"].endswith(
        "frame-ancestors https://client.example.com"
    )
    assert page.headers["Cache-Control"] == "no-store" and "Set-Cookie" not in page.headers
    html = page.get_data(as_text=True)
    assert 'role="status"' in html and "waiting in the queue" in html
    status_url = re.search(r'hx-get="([^"]+)" hx-trigger="every 1s"', html).group(1)
    status_url = status_url.replace("&amp;", "&")
    assert status_url.startswith(f"/embed/{embed.public_id}/runs/{run_id}/status?token=")
    # The page's own link, its token signed anew (in another second, another token).
    refresh = f'<noscript><a href="{location.partition("?token=")[0]}?token='
    assert refresh in html and ">Refresh</a></noscript>" in html
    assert ">one two three four</textarea>" in html  # the form keeps the run's input
    assert 'src="/static/vendor/htmx/htmx.min.js"' in html
    assert "<script>" not in html and "style=" not in html
    # The key's daily quota is reserved once, when the run is queued.
    assert quota.store().usage(key.id, clock.now()).calls == 1

    run_tool_job(run_id)
    status = client.get(status_url)
    assert status.status_code == 200
    fragment = status.get_data(as_text=True)
    assert fragment.lstrip().startswith('<div id="run-status" role="status"')
    assert 'state-succeeded">done<' in fragment and "Result" in fragment
    assert "hx-trigger" not in fragment and "Run it again" not in fragment
    assert status.headers["Content-Security-Policy"].endswith(
        "frame-ancestors https://client.example.com"
    )
    recorded = db.session.get(Run, run_id, populate_existing=True)
    assert (recorded.status, recorded.source, recorded.embed_id) == ("succeeded", "embed", embed.id)
    assert (recorded.api_key_id, recorded.account_id, recorded.credits) == (key.id, account.id, 1)
    assert recorded.output["words"] == 4
    ledger = db.session.scalars(db.select(UsageEvent).where(UsageEvent.run_id == run_id)).all()
    assert [(event.api_key_id, event.credits) for event in ledger] == [(key.id, 1)]
    assert quota.store().usage(key.id, clock.now()).calls == 1  # charged once
    assert embeds.totals([embed.id])[embed.id] == (1, 1, 1)


def test_the_status_of_another_run_or_with_another_token_is_the_empty_answer(client, queued):
    agency = _agency()
    embed, other = new_embed(agency), new_embed(agency)
    location = post_run(client, embed, text="a b").headers["Location"]
    run_id = _run_id(location)
    good = parse_qs(urlsplit(location).query)["token"][0]
    theirs = _run_id(post_run(client, other, text="c d").headers["Location"])
    stranger = new_embed(_agency())
    strangers = _run_id(post_run(client, stranger, text="e f").headers["Location"])
    base = f"/embed/{embed.public_id}/runs"
    page_token = token_of(client.get(f"/embed/{embed.public_id}").get_data(as_text=True))
    refused = [
        f"{base}/{run_id}",  # no token
        f"{base}/{run_id}?token=forged",
        f"{base}/{run_id}?token={page_token}",  # a page's token shows no run
        f"{base}/{run_id}?token={embeds.make_token(other, run_id)}",  # another widget's token
        f"{base}/{theirs}?token={good}",  # this run's token names another run
        # Another widget's run, even under a token of this widget for that run id:
        f"{base}/{theirs}?token={embeds.make_token(embed, theirs)}",
        f"{base}/{strangers}?token={embeds.make_token(embed, strangers)}",  # another account's
        f"{base}/{'x' * 60}?token={good}",
        f"/embed/{other.public_id}/runs/{run_id}?token={good}",
    ]
    for url in refused:
        for suffix in ("", "/status"):
            path, _, query = url.partition("?")
            answer = client.get(path + suffix + ("?" + query if query else ""))
            assert answer.status_code == 404, (url, suffix)
            assert answer.get_data(as_text=True) == EMPTY_BODY
        path, _, query = url.partition("?")
        token = parse_qs(query).get("token", [""])[0]
        cancel = client.post(f"{path}/cancel", data={"token": token})
        assert cancel.get_data(as_text=True) == EMPTY_BODY, url
    assert db.session.get(Run, run_id, populate_existing=True).status == "queued"
    assert client.get(location).status_code == 200
    # A run's token lasts an hour (each status answer carries a fresh one), then is refused.
    clock.set_offset(timedelta(minutes=61))
    try:
        expired = client.get(location)
    finally:
        clock.set_offset(timedelta(0))
    assert expired.status_code == 404 and expired.get_data(as_text=True) == EMPTY_BODY
    # Rotating the public id ends its runs' pages too.
    embeds.update(embed, {"rotate_public_id": True})
    db.session.commit()
    assert client.get(location).get_data(as_text=True) == EMPTY_BODY
    # A run's token never runs the tool.
    run = client.post(f"/embed/{embed.public_id}", data={"token": good, "text": "x"})
    assert run.status_code == 400


def test_cancel_gives_back_the_quota_and_the_visitors_run(client, queued):
    agency = _agency()
    _account, key = agency
    embed = new_embed(agency, per_visitor_daily=1)
    location = post_run(client, embed, text="a b").headers["Location"]
    run_id = _run_id(location)
    assert post_run(client, embed, text="again").status_code == 429  # the visitor's one run
    token = parse_qs(urlsplit(location).query)["token"][0]
    canceled = client.post(f"/embed/{embed.public_id}/runs/{run_id}/cancel", data={"token": token})
    assert canceled.status_code == 303
    assert db.session.get(Run, run_id, populate_existing=True).status == "canceled"
    html = client.get(canceled.headers["Location"]).get_data(as_text=True)
    assert 'state-canceled">canceled<' in html and "did not count against this tool" in html
    assert quota.store().usage(key.id, clock.now()).calls == 0
    run_tool_job(run_id)  # the job finds it canceled: nothing runs
    assert db.session.get(Run, run_id, populate_existing=True).status == "canceled"
    assert post_run(client, embed, text="again").status_code == 303
    # htmx's cancel answers the status region.
    second = queued.jobs[-1][1][0]
    hx = client.post(
        f"/embed/{embed.public_id}/runs/{second}/cancel",
        data={"token": embeds.make_token(embed, second)},
        headers={"HX-Request": "true"},
    )
    assert hx.status_code == 200
    assert hx.get_data(as_text=True).lstrip().startswith('<div id="run-status"')


def test_a_failed_queued_run_gives_everything_back(client, queued, monkeypatch):
    agency = _agency()
    _account, key = agency
    embed = new_embed(agency, per_visitor_daily=1)

    def down(tool, inputs):
        raise ProviderUnavailable("provider at http://10.0.0.7 down", retry_after=5)

    monkeypatch.setattr("services.runs.run_tool", down)
    location = post_run(client, embed, text="a b").headers["Location"]
    run_id = _run_id(location)
    run_tool_job(run_id)
    html = client.get(location).get_data(as_text=True)
    assert 'state-failed">failed<' in html and "The tool could not finish this run." in html
    assert "10.0.0.7" not in html
    assert quota.store().usage(key.id, clock.now()).calls == 0
    assert db.session.scalars(db.select(UsageEvent).where(UsageEvent.run_id == run_id)).all() == []
    assert post_run(client, embed, text="again").status_code == 303  # the cap was given back


def test_a_file_tools_image_shows_in_the_widget(client):
    agency = _agency()
    account, _key = agency
    embed = new_embed(agency, tool="qr-code-generator")
    answer = post_run(client, embed, data="https://example.com/menu")
    assert answer.status_code == 200, answer.get_data(as_text=True)[:600]
    html = answer.get_data(as_text=True)
    src = re.search(r'<img src="(/v1/files/[^"]+)"', html).group(1)
    assert "img-src 'self'" in answer.headers["Content-Security-Policy"]
    image = client.get(src)
    assert image.status_code == 200 and image.mimetype == "image/png"
    stored = db.session.get(StoredFile, src.rsplit("/", 1)[1])
    assert stored.account_id == account.id  # the agency's file, as its API runs' are


# --- the embedded default: its in-process queue and a model provider -----------------------


@pytest.fixture
def embedded(tmp_path, fake_provider):
    with (
        embedded_app_at(
            tmp_path / "embedded.db", AI_BASE_URL=fake_provider.base_url, AI_TIMEOUT_SECONDS=5.0
        ) as app,
        app.app_context(),
    ):
        yield app


def _until_done(client, html: str, seconds: float = 20) -> str:
    """Poll the status region as the widget's htmx does, until the run ends."""
    deadline = time.monotonic() + seconds
    while (found := re.search(r'hx-get="([^"]+)" hx-trigger="every 1s"', html)) is not None:
        assert time.monotonic() < deadline, html[-800:]
        time.sleep(0.05)
        answer = client.get(found.group(1).replace("&amp;", "&"))
        assert answer.status_code == 200
        html = answer.get_data(as_text=True)
    return html


def test_a_model_tool_and_an_image_tool_run_through_the_widget_on_the_embedded_queue(
    embedded, fake_provider
):
    client = embedded.test_client()
    agency = _agency()
    text_widget = new_embed(agency, tool="abstractive-summarizer")
    image_widget = new_embed(agency, tool="app-icon-generator")

    answer = post_run(client, text_widget, text="The meeting moved to Tuesday at noon. " * 5)
    assert answer.status_code == 303
    page = client.get(answer.headers["Location"]).get_data(as_text=True)
    done = _until_done(client, page)
    assert 'state-succeeded">done<' in done and "Result" in done
    run = db.session.get(Run, _run_id(answer.headers["Location"]), populate_existing=True)
    assert (run.status, run.source, run.embed_id) == ("succeeded", "embed", text_widget.id)

    answer = post_run(client, image_widget, app_name="Harbour Notes")
    assert answer.status_code == 303
    done = _until_done(client, client.get(answer.headers["Location"]).get_data(as_text=True))
    src = re.search(r'<img src="(/v1/files/[^"]+)"', done).group(1)
    image = client.get(src)
    assert image.status_code == 200 and image.mimetype.startswith("image/")
    assert fake_provider.calls("/v1/images/generations")


def test_nothing_a_queued_run_shows_holds_the_key(client, queued):
    """The run's page, its status, its cancel and the scripts they load never carry the
    agency's key (its raw value, hash or hint)."""
    account = accounts.create_account(f"queued-agency{next(_emails)}@example.com", "agency")
    key, raw = keys.create_key(account, "widgets")
    db.session.commit()
    embed = new_embed((account, key))
    posted = post_run(client, embed, text="a b c")
    location = posted.headers["Location"]
    run_id = _run_id(location)
    page = client.get(location)
    html = page.get_data(as_text=True)
    status_url = re.search(r'hx-get="([^"]+)"', html).group(1).replace("&amp;", "&")
    answers = [posted, page, client.get(status_url)]
    run_tool_job(run_id)
    answers.append(client.get(status_url))
    token = parse_qs(urlsplit(location).query)["token"][0]
    answers.append(
        client.post(f"/embed/{embed.public_id}/runs/{run_id}/cancel", data={"token": token})
    )
    scripts = sorted(set(re.findall(r'src="(/static/[^"]+)"', html)))
    assert "/static/vendor/htmx/htmx.min.js" in scripts
    served = [a.get_data(as_text=True) + str(a.headers) for a in answers]
    for path in scripts:
        with client.get(path) as script:  # a static file's answer holds it open
            served.append(script.get_data(as_text=True))
    for text in served:
        for secret in (raw, key.key_hash, key.hint, raw[4:], key.id):
            assert secret not in text
