"""Tool pages: the form made from the input schema, runs for visitors through the API's
services, the five free runs a day, and every bad input answered on the page."""

import dataclasses
import io
import re

import pytest
from flask import g
from markupsafe import escape
from sqlalchemy import func, select

from catalogue import load_catalogue
from engines import EngineError
from engines.base import note_model
from engines.models import local_llm
from extensions import db
from models import Run, StoredFile
from services import allowance, runs


def png_bytes(width: int, height: int) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 40, 40)).save(buffer, "PNG")
    return buffer.getvalue()


BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/124.0 Safari/537.36"
TEXT = "one two three four"


def visitor(app, agent: str = BROWSER, address: str = "198.51.100.7"):
    """A browser's test client: its own cookies, a browser's user agent, an address."""
    client = app.test_client()
    client.environ_base.update(
        {
            "HTTP_USER_AGENT": agent,
            "HTTP_ACCEPT_LANGUAGE": "en-GB",
            "REMOTE_ADDR": address,
            # A browser's same-origin form post names its page (CSRF's check over HTTPS).
            "HTTP_REFERER": "https://svc.test/tools/",
        }
    )
    return client


def token(client, slug: str = "word-counter") -> str:
    # The test's app context outlives its requests, and Flask-WTF keeps the token it made in
    # ``g``: another client would be handed it (a browser's requests each have their own).
    g.pop("csrf_token", None)
    page = client.get(f"/tools/{slug}/").get_data(as_text=True)
    return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)


def run(client, slug: str = "word-counter", **fields):
    data = {"csrf_token": token(client, slug), **fields}
    return client.post(f"/tools/{slug}/", data=data, content_type="multipart/form-data")


def web_runs() -> int:
    return db.session.scalar(select(func.count()).select_from(Run).where(Run.source == "web"))


def left(response) -> int:
    return int(
        re.search(r"<strong>(\d+)</strong> of 5 free runs", response.get_data(as_text=True))[1]
    )


def test_the_form_follows_the_input_schema(app):
    client = visitor(app)
    page = client.get("/tools/word-frequency-counter/")
    assert page.status_code == 200 and page.mimetype == "text/html"
    assert "HX-Request" in page.headers["Vary"]
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    html = page.get_data(as_text=True)
    # Primary field first, as a textarea; options under Advanced.
    assert html.index('name="text"') < html.index('<details class="advanced"')
    assert re.search(r'<select id="field-language" name="language"', html)
    assert '<option value="en" selected>' in html
    assert re.search(r'type="number" id="field-min_length"[^>]* min="1" max="30"', html)
    assert 'type="checkbox" role="switch" id="field-exclude_stop_words"' in html
    assert "<title>Word Frequency Counter" in html
    assert '<meta name="description" content="' in html and 'property="og:title"' in html
    assert "curl -X POST" in html and "/v1/public/tools/word-frequency-counter/run" in html
    files = client.get("/tools/image-resizer/").get_data(as_text=True)
    assert re.search(r'<input type="file" id="field-image" name="image"[^>]*accept="image/', files)
    assert "Up to 25 MB" in files and 'enctype="multipart/form-data"' in files


def test_fill_example_fills_the_form(app):
    html = visitor(app).get("/tools/word-counter/?example=1").get_data(as_text=True)
    example = load_catalogue().get("word-counter").examples[0]["input"]
    text = example.get("text") or example.get("input")
    assert text.split("\n")[0] in html


def test_the_header_links_sign_in_on_every_view_of_a_tool_page(app):
    """The page rendered whole (a run's result, a filled example) put the header's link in
    escaped: visitors read '<a href="/account/login" >Sign in</a>' as text."""
    client = visitor(app)
    pages = (
        client.get("/tools/word-counter/"),  # the cached first view
        client.get("/tools/word-counter/?example=1"),
        run(client, text=TEXT),
    )
    for page in pages:
        html = page.get_data(as_text=True)
        assert '<a href="/account/login" >Sign in</a>' in html
        assert "&lt;a href" not in html


def test_a_text_tool_runs_and_its_output_renders(app):
    client = visitor(app)
    response = run(client, text=TEXT)
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    html = response.get_data(as_text=True)
    assert "<h2>Result</h2>" in html and '<th scope="row">Words</th><td>4</td>' in html
    assert left(response) == 4
    stored = db.session.scalars(select(Run).where(Run.source == "web")).one()
    assert stored.tool_slug == "word-counter" and stored.status == "succeeded"
    assert stored.account_id is None and stored.api_key_id is None and stored.credits == 0
    assert stored.visitor_id and stored.web_address and stored.web_device
    # The API panel shows the inputs of the run.
    assert "one two three four" in html.split('id="api-panel"')[1]


def test_htmx_gets_the_runner_alone(app):
    client = visitor(app)
    data = {"csrf_token": token(client), "text": TEXT}
    response = client.post("/tools/word-counter/", data=data, headers={"HX-Request": "true"})
    html = response.get_data(as_text=True)
    assert response.status_code == 200 and "<html" not in html
    assert html.lstrip().startswith('<section id="tool-runner"')


def test_a_field_error_shows_beside_its_field_and_nothing_runs(app):
    client = visitor(app)
    response = run(client, "word-frequency-counter", text=TEXT, min_length="nine")
    assert response.status_code == 422
    html = response.get_data(as_text=True)
    assert 'id="field-min_length-error">Must be a whole number.' in html
    assert 'aria-invalid="true"' in html
    response = run(client, "word-frequency-counter", text=TEXT, min_length="99")
    assert response.status_code == 422
    assert 'id="field-min_length-error">Must be at most 30.' in response.get_data(as_text=True)
    response = run(client, text="")
    assert response.status_code == 422 and 'id="field-text-error"' in response.get_data(
        as_text=True
    )
    assert web_runs() == 0
    assert left(response) == 5


def test_the_sixth_run_is_refused_and_nothing_runs(app):
    client = visitor(app)
    for remaining in (4, 3, 2, 1, 0):
        assert left(run(client, text=TEXT)) == remaining
    refused = run(client, text=TEXT)
    assert refused.status_code == 429
    html = refused.get_data(as_text=True)
    assert (
        "You have used today&#39;s free runs" in html or "You have used today's free runs" in html
    )
    assert "/pricing?plan=pro" in html and "Nothing was run." in html
    assert web_runs() == 5


def test_clearing_cookies_gives_no_more_runs(app):
    client = visitor(app)
    for _ in range(5):
        run(client, text=TEXT)
    client.delete_cookie("svc_visitor", domain="svc.test")
    assert client.get_cookie("svc_visitor", domain="svc.test") is None
    assert run(client, text=TEXT).status_code == 429
    fresh = visitor(app)  # a new browser profile on the same machine
    assert run(fresh, text=TEXT).status_code == 429
    assert web_runs() == 5


def test_an_address_is_capped_however_many_browsers(app):
    app.config["WEB_ADDRESS_DAILY_CAP"] = 7
    for n in range(7):  # colleagues behind one address, each with another browser
        assert run(visitor(app, agent=f"{BROWSER} colleague/{n}"), text=TEXT).status_code == 200
    refused = run(visitor(app, agent=f"{BROWSER} colleague/99"), text=TEXT)
    assert refused.status_code == 429
    assert "shared by everyone on your network" in refused.get_data(as_text=True)


def test_a_spoofed_forwarded_for_is_not_believed(app):
    client = visitor(app)
    for _ in range(5):
        run(client, text=TEXT)
    client.delete_cookie("svc_visitor", domain="svc.test")
    spoofed = {"X-Forwarded-For": "203.0.113.99"}
    data = {"csrf_token": token(client), "text": TEXT}
    assert client.post("/tools/word-counter/", data=data, headers=spoofed).status_code == 429


def test_trusted_proxies_give_the_client_address(app):
    from werkzeug.middleware.proxy_fix import ProxyFix

    app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1)
    client = visitor(app)
    for _ in range(5):
        run(client, text=TEXT)
    client.delete_cookie("svc_visitor", domain="svc.test")
    data = {"csrf_token": token(client), "text": TEXT}
    other = {"X-Forwarded-For": "203.0.113.99"}  # the proxy says: another client
    assert client.post("/tools/word-counter/", data=data, headers=other).status_code == 200


def test_a_failed_run_gives_its_free_run_back(app, monkeypatch):
    def refuse(tool, inputs):
        raise EngineError("The text could not be read.")

    monkeypatch.setattr("services.runs.run_tool", refuse)
    response = run(visitor(app), text=TEXT)
    assert response.status_code == 422
    assert "The text could not be read." in response.get_data(as_text=True)
    assert left(response) == 5
    failed = db.session.scalars(select(Run).where(Run.source == "web")).one()
    assert failed.status == "failed"


def answered_by_the_embedded_model(monkeypatch) -> str:
    """Runs answer as if the embedded model had written their output; its note, as a page
    shows it."""
    real = runs.run_tool

    def embedded(tool, inputs):
        note_model(local_llm.model_name())
        return real(tool, inputs)

    monkeypatch.setattr(runs, "run_tool", embedded)
    return str(escape(runs.quality_note(local_llm.model_name())))


def test_a_result_the_embedded_model_wrote_says_so_beside_it(app, monkeypatch):
    client = visitor(app)

    def result() -> str:
        return client.post(
            "/tools/word-counter/",
            data={"csrf_token": token(client), "text": TEXT},
            headers={"HX-Request": "true"},
        ).get_data(as_text=True)

    plain = result()
    assert "<h2>Result</h2>" in plain and "built into this service" not in plain
    note = answered_by_the_embedded_model(monkeypatch)

    fragment = result()

    # Words, before the output: no icon, no colour alone.
    assert re.search(rf'<div class="output">\s*<p class="notice">{re.escape(note)}</p>', fragment)
    latest = db.session.scalars(
        select(Run).where(Run.source == "web").order_by(Run.created_at.desc())
    ).first()
    assert latest.model == local_llm.model_name()
    page = client.get(f"/runs/{latest.id}/")
    assert f'<p class="notice">{note}</p>' in page.get_data(as_text=True)
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]


def test_a_tampered_cookie_runs_nothing(app):
    client = visitor(app)
    csrf = token(client)
    client.set_cookie("svc_visitor", "forged.value", domain="svc.test")
    response = client.post("/tools/word-counter/", data={"csrf_token": csrf, "text": TEXT})
    assert response.status_code == 400
    assert "visitor cookie could not be read" in response.get_data(as_text=True)
    assert "svc_visitor=" in response.headers.get("Set-Cookie", "")
    assert web_runs() == 0


def test_a_form_without_its_csrf_token_runs_nothing(app):
    response = visitor(app).post("/tools/word-counter/", data={"text": TEXT})
    assert response.status_code == 400 and response.mimetype == "text/html"
    assert "did not come from this site" in response.get_data(as_text=True)
    assert web_runs() == 0


def test_an_error_answered_to_htmx_takes_the_page(app):
    """htmx asked for the runner: an error page's content replaces the page's instead."""
    response = visitor(app).post(
        "/tools/word-counter/", data={"text": TEXT}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 400
    assert response.headers["HX-Retarget"] == "#main"
    assert response.headers["HX-Reselect"] == "#main"
    assert '<main id="main"' in response.get_data(as_text=True)


def test_bots_are_refused(app):
    client = visitor(app)
    assert run(client, text=TEXT, website="http://spam.example").status_code == 403
    crawler = visitor(app, agent="Mozilla/5.0 (compatible; Googlebot/2.1)")
    assert crawler.get("/tools/word-counter/").status_code == 200  # may read
    assert run(crawler, text=TEXT).status_code == 403  # may not run
    assert web_runs() == 0


def test_unknown_tools_and_runs_are_site_404s(app):
    client = visitor(app)
    for path in (
        "/tools/no-such-tool/",
        "/runs/nope/",
        "/runs/01a21147-268a-758c-90ac-7b2606d0d5ea/",
    ):
        response = client.get(path)
        assert response.status_code == 404 and response.mimetype == "text/html"
        assert "This page does not exist" in response.get_data(as_text=True)


def test_an_image_tool_runs_on_an_upload_and_its_file_is_the_visitors_alone(app):
    client = visitor(app)
    data = {"image": (io.BytesIO(png_bytes(64, 48)), "pic.png"), "width": "32"}
    response = run(client, "image-resizer", **data)
    assert response.status_code == 200, response.get_data(as_text=True)[:800]
    html = response.get_data(as_text=True)
    src = re.search(r'<img src="(/runs/[^"]+/files/[^"]+)"', html)[1]
    image = client.get(src)
    assert image.status_code == 200 and image.mimetype.startswith("image/")
    assert visitor(app, address="192.0.2.1").get(src).status_code == 404
    file_id = src.rsplit("/", 1)[1]
    assert db.session.get(StoredFile, file_id).account_id is None
    assert client.get(f"/v1/files/{file_id}").status_code == 404  # not a public capability


def test_wrong_file_types_and_oversized_uploads_are_refused(app):
    client = visitor(app)
    response = run(client, "image-resizer", image=(io.BytesIO(b"%PDF-1.4 not an image"), "a.pdf"))
    assert response.status_code == 422
    assert 'id="field-image-error"' in response.get_data(as_text=True)
    app.config["MAX_CONTENT_LENGTH"] = 1024
    big = run(client, "image-resizer", image=(io.BytesIO(b"x" * 4096), "big.png"))
    assert big.status_code == 413
    assert "the most a request may carry. Nothing ran." in big.get_data(as_text=True)
    assert web_runs() == 0
    assert db.session.scalar(select(func.count()).select_from(StoredFile)) == 0


def test_a_queued_run_is_the_visitors_alone_and_can_be_canceled(app, monkeypatch):
    tool = dataclasses.replace(load_catalogue().get("word-counter"), queue=True)
    monkeypatch.setattr("blueprints.site.tools.load_catalogue", lambda: _with(tool))
    monkeypatch.setattr("jobs.runs.dispatcher", lambda: _NoQueue())
    client = visitor(app)
    response = run(client, text=TEXT)
    assert response.status_code == 303
    page = response.headers["Location"]
    html = client.get(page).get_data(as_text=True)
    assert "waiting in the queue" in html and 'hx-trigger="every 1s"' in html
    assert visitor(app, address="192.0.2.1").get(page).status_code == 404
    status = client.get(page + "status").get_data(as_text=True)
    assert status.lstrip().startswith('<div id="run-status"')
    assert left(client.get("/tools/word-counter/")) == 4
    run_id = page.strip("/").rsplit("/", 1)[1]
    csrf = token(client)
    canceled = client.post(f"/runs/{run_id}/cancel", data={"csrf_token": csrf})
    assert canceled.status_code == 303
    assert db.session.get(Run, run_id, populate_existing=True).status == "canceled"
    assert left(client.get("/tools/word-counter/")) == 5
    # "Run it again" opens the tool's form filled with the run's input, without running it.
    again = re.search(
        r'href="([^"]+)" role="button" class="secondary outline">Run it again',
        client.get(page).get_data(as_text=True),
    )[1]
    assert again == f"/tools/word-counter/?from_run={run_id}"
    assert f">{TEXT}</textarea>" in client.get(again).get_data(as_text=True)
    assert left(client.get("/tools/word-counter/")) == 5


def test_a_tool_that_cannot_run_here_says_why_and_offers_no_run(app):
    unavailable = next(tool for tool in load_catalogue() if tool.unavailable_reason)
    client = visitor(app)
    html = client.get(f"/tools/{unavailable.slug}/").get_data(as_text=True)
    assert "This tool cannot run on this deployment" in html
    assert re.search(r"<button type=\"submit\" id=\"run-button\" disabled>", html)
    response = run(client, unavailable.slug)
    assert response.status_code in (422, 503)
    assert web_runs() == 0


def test_a_tool_of_a_higher_plan_needs_that_plan(app):
    creator = next(tool for tool in load_catalogue() if tool.required_plan == "creator")
    response = run(visitor(app), creator.slug)
    assert response.status_code == 402
    assert "/pricing?plan=creator" in response.get_data(as_text=True)
    assert web_runs() == 0


def test_counts_lost_with_redis_are_counted_again(app):
    client = visitor(app)
    for _ in range(3):
        run(client, text=TEXT)
    client_redis = app.extensions.get("redis")
    if client_redis is None:
        pytest.skip("the embedded default keeps its counters in the process")
    client_redis.flushdb()
    assert left(client.get("/tools/word-counter/")) == 2
    assert left(run(client, text=TEXT)) == 1


def test_allowance_reserve_is_all_or_nothing(app):
    visitor_ = allowance.Visitor("v" * 20, "address", "device")
    app.config["WEB_ADDRESS_DAILY_CAP"] = 2
    allowance.reserve(visitor_)
    other = allowance.Visitor("w" * 20, "address", "device2")
    allowance.reserve(other)
    with pytest.raises(allowance.AllowanceExhausted) as refused:
        allowance.reserve(allowance.Visitor("x" * 20, "address", "device3"))
    assert refused.value.by_address
    # Nothing was counted for the refused visitor.
    assert allowance.current(allowance.Visitor("x" * 20, "other", "device3")).used == 0


class _NoQueue:
    """A queue that keeps what it is given (nothing runs it)."""

    def enqueue(self, *args, **kwargs):
        self.args = args

    def finished(self, run_id):
        pass


def _with(tool):
    catalogue = load_catalogue()
    return dataclasses.replace(catalogue, tools={**catalogue.tools, tool.slug: tool})


def test_the_api_panel_is_code_for_the_inputs_in_the_form(app):
    import ast
    import html as html_lib
    import json
    import shlex

    page = visitor(app).get("/tools/word-frequency-counter/?example=1").get_data(as_text=True)
    code = {
        name: html_lib.unescape(re.search(rf'id="snippet-{name}">(.*?)</code>', page, re.S)[1])
        for name in ("curl", "python", "javascript")
    }
    ast.parse(code["python"])  # valid Python
    body = json.loads(shlex.split(code["curl"].replace("\\\n", " "))[-1])
    example = load_catalogue().get("word-frequency-counter").examples[0]["input"]
    assert body["text"] == example.get("text", example.get("input"))
    assert "/v1/public/tools/word-frequency-counter/run" in code["javascript"]
    assert "X-SVC-API-Key" in code["javascript"] and "$SVC_API_KEY" in code["curl"]


def test_a_fault_is_the_sites_500_page(app, monkeypatch):
    def broken(*args):
        raise RuntimeError("a bug")

    monkeypatch.setattr("blueprints.site.tools.csrf_token", broken)
    app.config["PROPAGATE_EXCEPTIONS"] = False
    response = visitor(app).get("/tools/word-counter/")
    assert response.status_code == 500 and response.mimetype == "text/html"
    html = response.get_data(as_text=True)
    assert "Something went wrong on our side" in html and "a bug" not in html
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]


def test_the_page_made_once_carries_each_visitors_own_parts(app):
    first, second = visitor(app), visitor(app, agent=f"{BROWSER} other")
    run(first, text=TEXT)
    assert left(first.get("/tools/word-counter/")) == 4
    assert left(second.get("/tools/word-counter/")) == 5
    tokens = {token(first), token(second)}
    assert len(tokens) == 2 and not any("\x00" in value for value in tokens)
    assert "\x00" not in second.get("/tools/word-counter/").get_data(as_text=True)
