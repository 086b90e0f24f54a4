"""The site assistant's pages: the Ask form on every page, /assistant answered without
JavaScript, the SSE stream, thumbs up or down with CSRF, the limits, and /docs/guide."""

from __future__ import annotations

import re

import pytest
from flask import g
from sqlalchemy import delete, select

from extensions import db
from models.assistant import AssistantAnswer
from services.assistant import current_index

BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/124.0 Safari/537.36"
PODCAST = "which tool turns a podcast into show notes?"


@pytest.fixture(autouse=True)
def no_answers_left(app):
    yield
    db.session.rollback()
    db.session.execute(delete(AssistantAnswer))
    db.session.commit()


def visitor(app, address: str = "198.51.100.7"):
    client = app.test_client()
    client.environ_base.update(
        {
            "HTTP_USER_AGENT": BROWSER,
            "REMOTE_ADDR": address,
            "HTTP_REFERER": "https://svc.test/assistant",
        }
    )
    return client


def ask(client, question: str, path: str = "/assistant"):
    g.pop("csrf_token", None)  # the test's app context outlives its requests
    return client.get(path, query_string={"q": question})


def stored() -> list[AssistantAnswer]:
    db.session.expire_all()
    return list(db.session.scalars(select(AssistantAnswer)))


@pytest.mark.parametrize(
    "path", ["/", "/tools/", "/tools/word-counter/", "/pricing", "/docs/guide"]
)
def test_every_page_has_the_ask_form(app, path):
    page = visitor(app).get(path).get_data(as_text=True)
    assert 'action="/assistant" method="get" data-assistant="ask-answer"' in page
    assert '<label for="ask-question">' in page
    assert 'id="ask-answer" class="assistant-answer" aria-live="polite"' in page
    assert '<script src="/static/js/assistant.js" defer></script>' in page


def test_the_answer_page_works_without_javascript(app):
    client = visitor(app)
    response = ask(client, PODCAST)
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert '<a href="/tools/podcast-show-notes/">' in page
    assert "These tools fit best:" in page
    assert "<script>" not in page  # no inline script
    [row] = stored()
    assert row.question == PODCAST
    assert row.mode == "retrieval"
    assert row.retrieved[0]["id"] == "tool:podcast-show-notes"
    assert row.retrieved[0]["score"] > 0
    assert row.visitor and len(row.visitor) == 64
    assert "svc_visitor=" in response.headers.get("Set-Cookie", "")  # counted by its cookie


def test_an_api_question_links_the_guide_section_that_exists(app):
    client = visitor(app)
    page = ask(client, "how do I verify a webhook?").get_data(as_text=True)
    assert '<a href="/docs/guide#webhooks">' in page
    guide = client.get("/docs/guide").get_data(as_text=True)
    assert '<h3 id="webhooks">Webhooks</h3>' in guide
    assert "X-SVC-Signature" in guide


def test_every_docs_link_of_the_index_has_its_anchor_on_the_guide(app):
    guide = visitor(app).get("/docs/guide").get_data(as_text=True)
    anchors = set(re.findall(r'<h[23] id="([^"]+)"', guide))
    docs = [d for d in current_index().documents if d.url.startswith("/docs/guide#")]
    assert docs and {d.url.split("#")[1] for d in docs} <= anchors


@pytest.mark.parametrize("path", ["/pricing", "/docs"])
def test_the_site_pages_it_links_exist(app, path):
    assert any(d.url == path for d in current_index().documents)
    assert visitor(app).get(path).status_code == 200


def test_the_guide_has_the_strict_content_security_policy(app):
    response = visitor(app).get("/docs/guide")
    assert "style-src 'self';" in response.headers["Content-Security-Policy"]


def test_the_stream_sends_server_sent_events(app):
    client = visitor(app)
    response = ask(client, PODCAST, "/assistant/stream")
    assert response.status_code == 200
    assert response.mimetype == "text/event-stream"
    assert response.headers["Cache-Control"] == "no-store"
    body = response.get_data(as_text=True)
    events = [block for block in body.split("\n\n") if block]
    names = [block.split("\n", 1)[0] for block in events]
    assert names[0] == "event: status" and names[-1] == "event: done"
    assert set(names[1:-1]) == {"event: chunk"}
    for block in events:
        assert all(line.startswith(("event: ", "data: ")) for line in block.split("\n"))
    assert 'data:   <li><a href="/tools/podcast-show-notes/">' in body
    assert re.search(r'action="/assistant/answers/[0-9a-f-]{36}/vote"', body)
    assert 'name="csrf_token"' in body
    assert len(stored()) == 1


def test_a_model_answer_is_escaped_and_links_only_its_sources(app, monkeypatch):
    from engines.models import providers

    monkeypatch.setattr(providers, "configured", lambda: True)
    monkeypatch.setattr(
        providers,
        "chat",
        lambda *a, **k: "Try <script>alert(1)</script> [1] or https://evil.example/ [7].",
    )
    page = ask(visitor(app), PODCAST).get_data(as_text=True)
    answer = page[page.index('id="assistant-answer"') :]
    assert "<script>alert" not in answer
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in answer
    assert "evil.example" not in answer
    assert 'class="cite" href="/tools/podcast-show-notes/"' in answer
    assert "[7]" not in answer
    assert stored()[0].mode == "model"


def vote_form(page: str) -> tuple[str, str]:
    action = re.search(r'action="(/assistant/answers/[^"]+/vote)"', page).group(1)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    return action, token


def test_a_thumbs_up_is_stored_with_the_answer_without_javascript(app):
    client = visitor(app)
    action, token = vote_form(ask(client, PODCAST).get_data(as_text=True))
    response = client.post(action, data={"csrf_token": token, "vote": "up"})
    assert response.status_code == 303
    assert response.headers["Location"] == "/assistant?voted=1"
    assert stored()[0].vote == 1
    assert "Thanks" in client.get("/assistant?voted=1").get_data(as_text=True)


def test_a_thumbs_down_from_the_script_answers_a_fragment(app):
    client = visitor(app)
    action, token = vote_form(ask(client, PODCAST, "/assistant/stream").get_data(as_text=True))
    response = client.post(
        action, data={"csrf_token": token, "vote": "down"}, headers={"X-Requested-With": "fetch"}
    )
    assert response.status_code == 200
    assert "Thanks" in response.get_data(as_text=True)
    assert stored()[0].vote == -1


def test_a_vote_without_its_csrf_token_is_refused(app):
    client = visitor(app)
    action, _ = vote_form(ask(client, PODCAST).get_data(as_text=True))
    response = client.post(action, data={"vote": "up"})
    assert response.status_code == 400
    assert "Reload the page" in response.get_data(as_text=True)
    assert stored()[0].vote is None


def test_another_visitor_cannot_vote_on_an_answer(app):
    action, _ = vote_form(ask(visitor(app), PODCAST).get_data(as_text=True))
    other = visitor(app, address="203.0.113.9")
    g.pop("csrf_token", None)
    token = vote_form(ask(other, "crop a picture").get_data(as_text=True))[1]
    assert other.post(action, data={"csrf_token": token, "vote": "up"}).status_code == 404
    assert {row.question: row.vote for row in stored()}[PODCAST] is None


def test_a_bad_vote_value_is_422(app):
    client = visitor(app)
    action, token = vote_form(ask(client, PODCAST).get_data(as_text=True))
    assert client.post(action, data={"csrf_token": token, "vote": "maybe"}).status_code == 422


def test_a_question_too_long_is_refused_clearly(app):
    client = visitor(app)
    response = ask(client, "word " * 150)
    assert response.status_code == 422
    assert "ask in at most 500" in response.get_data(as_text=True)
    stream = ask(client, "word " * 150, "/assistant/stream")
    assert stream.status_code == 422
    assert stream.get_data(as_text=True).startswith("event: refused\n")
    assert stored() == []


def test_too_many_questions_answer_429_with_a_friendly_message(app):
    app.config["ASSISTANT_VISITOR_LIMIT"] = "3/10 minutes"
    client = visitor(app)
    for _ in range(3):
        assert ask(client, PODCAST).status_code == 200
    refused = ask(client, PODCAST)
    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) > 0
    assert "ask again in" in refused.get_data(as_text=True)
    stream = ask(client, PODCAST, "/assistant/stream")
    assert stream.status_code == 429
    assert "event: refused" in stream.get_data(as_text=True)
    assert len(stored()) == 3
    # Another visitor (another cookie, another address) still asks.
    assert ask(visitor(app, address="203.0.113.50"), PODCAST).status_code == 200


def test_new_cookies_do_not_escape_the_address_limit(app):
    app.config["ASSISTANT_ADDRESS_LIMIT"] = "2/10 minutes"
    for _ in range(2):
        assert ask(visitor(app), PODCAST).status_code == 200
    assert ask(visitor(app), PODCAST).status_code == 429


def test_a_tools_search_that_finds_nothing_offers_the_assistant(app):
    page = visitor(app).get("/tools/?q=make+my+photo+smaller").get_data(as_text=True)
    assert '<a href="/assistant?q=make%20my%20photo%20smaller">ask the assistant</a>' in page


def test_crawlers_are_asked_not_to_ask(app):
    lines = visitor(app).get("/robots.txt").get_data(as_text=True).splitlines()
    assert "Disallow: /assistant" in lines


def test_with_a_model_the_stream_says_it_is_writing_before_the_answer(app, monkeypatch):
    from engines.models import providers

    monkeypatch.setattr(providers, "configured", lambda: True)
    pieces = ["The show notes ", "tool [1].", "\n\nOr the ", "workflow [2]."]
    monkeypatch.setattr(providers, "chat_stream", lambda *a, **k: iter(pieces))
    body = ask(visitor(app), PODCAST, "/assistant/stream").get_data(as_text=True)
    events = [block for block in body.split("\n\n") if block]
    names = [block.split("\n", 1)[0] for block in events]
    assert names[:2] == ["event: status", "event: status"]
    assert "data: Writing an answer from the 6 pages found…" in events[1]
    # Each paragraph is its own event, sent as the model finishes it; then the sources.
    assert events[2].startswith('event: chunk\ndata: <p>The show notes tool <a class="cite"')
    assert events[3].startswith('event: chunk\ndata: <p>Or the workflow <a class="cite"')
    assert "Sources" in events[4] and names[-1] == "event: done"
    assert stored()[0].mode == "model"
