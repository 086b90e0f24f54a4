"""The application factory (app.py): its database pool, where a connection idle for a while
is checked before use (``_ping_idle_connections``), so one the server dropped meanwhile is
replaced instead of failing the statement given to it; its request class, which reads a
body of declared length in one read; its JSON provider; and flask-login's hook, kept to the
site's pages."""

import io

import psycopg
import pytest
import sqlalchemy as sa

from app import create_app
from extensions import db
from tests.helpers import app_config, auth, needs_pg


def _backend_pid() -> int:
    return db.session.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()


def _terminate(pid: int) -> None:
    """Drop the connection from the server's side, as a restart or an idle timeout does."""
    url = db.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


@needs_pg
def test_a_connection_dropped_while_idle_is_replaced_before_use(_schema):
    app = create_app(app_config(DB_PING_AFTER_IDLE=0))  # every checkout counts as idle
    with app.app_context():
        first = _backend_pid()
        db.session.commit()  # the connection goes back to the pool
        _terminate(first)
        second = _backend_pid()  # answered on a new connection: no error
        assert second != first
        db.session.remove()
        db.engine.dispose()


@needs_pg
def test_a_connection_back_in_use_within_the_idle_time_is_not_pinged(_schema):
    app = create_app(app_config(DB_PING_AFTER_IDLE=3600))
    with app.app_context():
        first = _backend_pid()
        db.session.commit()
        _terminate(first)
        # No ping: the statement meets the dropped connection (the API answers such an
        # error 503, tests/blueprints/api/test_outages.py), and the pool is renewed.
        with pytest.raises(sa.exc.OperationalError):
            _backend_pid()
        db.session.rollback()
        assert _backend_pid() != first
        db.session.remove()
        db.engine.dispose()


# --- the request body (PlatformRequest) -----------------------------------------------------

_RUN = b'{"slug": "word-counter", "input": "One two three."}'


class _CountedInput(io.BytesIO):
    """A server's input stream that counts the reads made of it."""

    reads = 0

    def read(self, size=-1):
        self.reads += 1
        return super().read(size)


def _post_run(client, raw: str, stream: io.BytesIO, **environ):
    return client.post(
        "/v1/tools/run",
        input_stream=stream,
        headers={**auth(raw), "Content-Type": "application/json"},
        environ_overrides=environ,
    )


def test_a_body_of_declared_length_is_read_whole_in_one_read(client, make_key):
    stream = _CountedInput(_RUN)
    response = _post_run(client, make_key(), stream, CONTENT_LENGTH=str(len(_RUN)))
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["output"]["words"] == 3
    assert stream.reads == 1


def test_a_chunked_body_is_read_by_werkzeug_to_its_end(client, make_key):
    # A server that de-chunks the body declares no length and ends the stream itself.
    response = _post_run(
        client, make_key(), io.BytesIO(_RUN),
        HTTP_TRANSFER_ENCODING="chunked", **{"wsgi.input_terminated": True},
    )  # fmt: skip
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["output"]["words"] == 3


def test_a_body_shorter_than_declared_is_a_bad_request(client, make_key):
    response = _post_run(client, make_key(), io.BytesIO(_RUN), CONTENT_LENGTH=str(len(_RUN) + 5))
    assert response.status_code == 400
    assert response.mimetype == "application/problem+json"
    assert response.get_json()["code"] == "bad_request"


def test_a_body_over_the_limit_is_refused_before_it_is_read(app, client, make_key):
    stream = _CountedInput(_RUN)
    over = app.config["MAX_CONTENT_LENGTH"] + 1
    response = _post_run(client, make_key(), stream, CONTENT_LENGTH=str(over))
    assert response.status_code == 413
    assert response.get_json()["code"] == "payload_too_large"
    assert stream.reads == 0


def test_a_form_body_is_still_parsed_after_it_was_read_whole(app):
    """werkzeug's form parser reads the cached body when the raw body was read first."""
    body = b"name=value&other=2"
    with app.test_request_context(
        "/", method="POST", data=body, content_type="application/x-www-form-urlencoded"
    ):
        from flask import request

        assert request.get_data() == body
        assert request.form.to_dict() == {"name": "value", "other": "2"}
        assert request.content_length == len(body)


def test_the_body_limit_is_the_apps_unless_set_on_the_request(app):
    with app.test_request_context("/", method="POST", data=b"x"):
        from flask import request

        assert request.max_content_length == app.config["MAX_CONTENT_LENGTH"]
        request.max_content_length = 5
        assert request.max_content_length == 5


# --- answers' JSON (speedups.PlatformJSONProvider) ------------------------------------------


def test_answers_are_compact_sorted_utf8_json_with_a_final_newline(app):
    with app.test_request_context("/"):
        response = app.json.response({"b": "café", "a": [1, 2.5, None, True]})
    assert response.mimetype == "application/json"
    assert response.get_data() == '{"a":[1,2.5,null,true],"b":"café"}\n'.encode()


def test_answers_encode_dates_uuids_and_dataclasses_as_flask_does(app):
    import dataclasses
    import datetime
    import uuid

    from flask.json.provider import DefaultJSONProvider

    @dataclasses.dataclass
    class Point:
        x: int

    value = {
        "when": datetime.datetime(2026, 11, 22, 12, 30, tzinfo=datetime.UTC),
        "day": datetime.date(2026, 11, 22),
        "id": uuid.UUID(int=7),
        "point": Point(3),
    }
    flask_json = DefaultJSONProvider(app)
    with app.test_request_context("/"):
        for answer in (value, {2: "two", 1: "one"}):
            assert app.json.response(answer).get_data() == flask_json.response(answer).get_data()


def test_what_orjson_cannot_encode_is_left_to_the_stdlib(app):
    with app.test_request_context("/"):
        wide = app.json.response({"n": 2**70})
        assert wide.get_data() == b'{"n":1180591620717411303424}\n'
        assert wide.mimetype == "application/json"
        with pytest.raises(TypeError):
            app.json.response({"x": object()})


def test_a_nan_is_answered_as_null_not_as_a_token_json_lacks(app):
    with app.test_request_context("/"):
        assert app.json.response({"x": float("nan")}).get_data() == b'{"x":null}\n'


def test_dumps_and_debug_answers_are_flasks_own(app):
    assert app.json.dumps({"b": 1, "a": "é"}) == '{"a": "\\u00e9", "b": 1}'
    app.debug = True
    try:
        with app.test_request_context("/"):
            assert app.json.response({"a": 1}).get_data() == b'{\n  "a": 1\n}\n'
    finally:
        app.debug = False


def test_parsing_keeps_wide_integers_exact(app):
    assert app.json.loads('{"n": 1180591620717411303424}') == {"n": 2**70}


def test_the_remember_me_cookie_is_refreshed_on_site_pages_only(app):
    from extensions import login_manager

    hooks = app.after_request_funcs[None]
    assert login_manager._update_remember_cookie not in hooks  # replaced by its wrapper
    (hook,) = [hook for hook in hooks if getattr(hook, "hook", None)]
    assert hook.hook == login_manager._update_remember_cookie
    for path, refreshed in (("/v1/public/whoami", False), ("/v1", False), ("/", True)):
        with app.test_request_context(path):
            assert hook.where() is refreshed, path
    with app.test_request_context("/v1x"):
        assert hook.where() is True
