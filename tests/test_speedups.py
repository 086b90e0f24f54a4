"""The private parts of Flask, werkzeug, flask-limiter and flask-login that ``speedups`` relies
on, pinned: an upgrade that changes one fails here, rather than leaving a departure silently
broken (or slow) in production."""

from __future__ import annotations

import io
import json

import flask_limiter
import flask_login
from flask import Flask, Request
from flask.json.provider import DefaultJSONProvider
from werkzeug.datastructures import Headers
from werkzeug.test import EnvironBuilder

import speedups
from extensions import limiter, login_manager


def _request(body: bytes, **environ) -> speedups.PlatformRequest:
    built = EnvironBuilder(method="POST", data=body, content_type="application/json").get_environ()
    built.update(environ)
    return speedups.PlatformRequest(built)


def test_a_body_read_in_one_read_is_where_werkzeug_looks_for_it():
    """``Request._cached_data`` is where werkzeug's ``get_json`` and forms find a body read
    before; ``_max_content_length`` holds a limit set on the request; ``stream`` is a
    cached property (in ``__dict__`` once opened)."""
    app = Flask(__name__)
    app.request_class = speedups.PlatformRequest
    with app.test_request_context():
        request = _request(b'{"a": 1}')
        assert request.get_data() == b'{"a": 1}'
        assert request._cached_data == b'{"a": 1}'
        assert request.get_json() == {"a": 1}
        assert "_max_content_length" in vars(Request)["max_content_length"].fget.__code__.co_names
        opened = _request(b"{}")
        opened.stream  # noqa: B018 - opening it
        assert "stream" in opened.__dict__
        assert opened._read_declared_body() is None  # left to werkzeug, as it was opened


def test_a_short_body_is_a_disconnect_as_werkzeug_says():
    request = _request(b"", CONTENT_LENGTH="10", **{"wsgi.input": io.BytesIO(b"abc")})
    app = Flask(__name__)
    with app.test_request_context():
        try:
            request.get_data()
        except speedups.ClientDisconnected:
            pass
        else:
            raise AssertionError("a body shorter than declared was read as whole")


def test_the_json_provider_hooks_flask_gives_subclasses():
    assert callable(DefaultJSONProvider._prepare_response_obj)
    app = Flask(__name__)
    app.json_provider_class = speedups.PlatformJSONProvider
    app.json = speedups.PlatformJSONProvider(app)
    assert app.json._app.name == app.name  # a weak proxy to the app
    with app.app_context():
        response = app.json.response({"b": "é", "a": float("nan")})
    assert response.get_data() == b'{"a":null,"b":"\xc3\xa9"}\n'
    assert json.loads(response.get_data()) == {"a": None, "b": "é"}


def test_ensure_sync_is_asked_with_the_functions_flask_calls():
    app = speedups.PlatformFlask(__name__)

    async def coroutine():
        return "async"

    def plain():
        return "sync"

    wrapped = []
    app.async_to_sync = lambda func: wrapped.append(func) or plain  # Flask's own hook
    assert app.ensure_sync(plain) is plain
    assert app.ensure_sync(coroutine) is plain and wrapped == [coroutine]
    assert app._coroutines == {plain: False, coroutine: True}
    app.ensure_sync(coroutine)  # asked again: the kept answer
    assert app._coroutines == {plain: False, coroutine: True} and len(wrapped) == 2


def test_flask_limiter_adds_request_hooks_that_can_be_taken_out():
    assert flask_limiter.__version__  # its init_app hooks into the app's *_request_funcs
    app = Flask(__name__)
    app.config["RATELIMIT_STORAGE_URI"] = "memory://"
    before = {name: len(getattr(app, name).get(None, [])) for name in speedups._HOOKS}
    speedups.without_request_hooks(app, limiter.init_app)
    after = {name: len(getattr(app, name).get(None, [])) for name in speedups._HOOKS}
    assert after == before
    probe = Flask(__name__)
    probe.config["RATELIMIT_STORAGE_URI"] = "memory://"
    limiter.init_app(probe)
    added = sum(len(getattr(probe, name).get(None, [])) for name in speedups._HOOKS)
    assert added > 0  # what without_request_hooks takes out is there to take


def test_flask_login_adds_its_remember_cookie_hook_where_it_is_replaced():
    assert flask_login.__version__
    app = Flask(__name__)
    app.secret_key = "test"
    login_manager.init_app(app)
    hook = login_manager._update_remember_cookie
    assert hook in app.after_request_funcs[None]
    seen = []
    speedups.hook_only_where(app, hook, lambda: bool(seen.append("asked")))
    assert hook not in app.after_request_funcs[None]
    (only_there,) = [h for h in app.after_request_funcs[None] if h.__name__ == "only_there"]
    response = object()
    assert only_there(response) is response and seen == ["asked"]


def test_headers_keep_their_pairs_in_the_list_appended_to():
    headers = Headers([("Content-Type", "application/json")])
    speedups.append_headers(headers, [("RateLimit", '"minute";r=9;t=60'), ("X-A", "1")])
    assert headers.get("RateLimit") == '"minute";r=9;t=60'
    assert headers.to_wsgi_list()[-1] == ("X-A", "1")
    assert isinstance(headers._list, list)
