"""Files in and out of tool runs: data: URIs, base64, URLs and uploads in; URLs out."""

import base64
import io
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest
from jsonschema import Draft202012Validator

import engines
from catalogue import Tool, load_catalogue
from catalogue.loader import expand_files
from catalogue.tool import MAX_FILE_CHARS
from engines.base import Engine
from engines.blob import Blob
from tests.blueprints.api.test_queued_runs import _until_ended
from tests.helpers import auth

SHOUT = Tool(
    slug="shout-file",
    name="Shout a text file",
    category="writing-analysis",
    summary="Upper-cases a text file.",
    required_plan="pro",
    credit_class="fast_text",
    inputs={
        "type": "object",
        "additionalProperties": False,
        "required": ["document"],
        "properties": {
            "document": {
                "type": "string",
                "contentMediaType": "text/plain",
                "maxLength": MAX_FILE_CHARS,
            },
            "times": {"type": "integer", "minimum": 1, "maximum": 3, "default": 1},
        },
    },
    primary="document",
    output=expand_files(
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["file", "length"],
            "properties": {
                "file": {"contentMediaType": "text/plain"},
                "length": {"type": "integer"},
            },
        }
    ),
    engine="test.shout",
    params={},
    queue=False,
    examples=[{"input": {"document": "data:text/plain,hi"}, "output": {}}],
)


@pytest.fixture(autouse=True)
def shout_tool(monkeypatch):
    """A tool with a file in and a file out, run by a fake engine."""
    real = load_catalogue().get

    def find(slug):
        from blueprints.api.problems import Problem

        tool = SHOUT if slug == SHOUT.slug else real(slug)
        if tool is None:
            raise Problem(404, "tool_not_found", "no such tool")
        return tool

    def shout(tool, inputs):
        document = inputs["document"]
        assert isinstance(document, Blob)
        text = document.data.decode().upper() * inputs["times"]
        return {"file": Blob(text.encode(), "text/plain", "shout.txt"), "length": len(text)}

    class ShoutEngine(Engine):
        name = SHOUT.engine

    monkeypatch.setattr("blueprints.api.tools.runs.find_tool", find)
    monkeypatch.setitem(engines._REGISTRY, SHOUT.engine, ShoutEngine())
    monkeypatch.setattr("services.runs.run_tool", shout)
    monkeypatch.setattr("services.runs.load_catalogue", lambda: SimpleNamespace(get=find))


def _run(client, raw, **kwargs):
    return client.post("/v1/tools/run", headers=auth(raw), **kwargs)


def _fetched(client, output) -> bytes:
    path = output["file"]["url"].split("svc.test", 1)[1]
    response = client.get(path)
    assert response.status_code == 200
    assert response.mimetype == "text/plain"
    data = response.get_data()
    response.close()
    return data


@pytest.mark.parametrize(
    "value",
    [
        "data:text/plain;base64," + base64.b64encode(b"hello file").decode(),
        "data:text/plain,hello%20file",
    ],
    ids=["data-uri-base64", "data-uri-text"],
)
def test_a_file_given_inline_is_decoded_and_the_output_file_is_a_url(client, make_key, value):
    response = _run(client, make_key(), json={"slug": "shout-file", "input": value})
    assert response.status_code == 200, response.get_json()
    output = response.get_json()["output"]
    Draft202012Validator(SHOUT.output).validate(output)
    assert output["length"] == 10
    assert output["file"]["content_type"] == "text/plain"
    assert output["file"]["filename"] == "shout.txt"
    assert _fetched(client, output) == b"HELLO FILE"


def test_bare_base64_of_a_type_that_bytes_cannot_tell_is_refused_clearly(client, make_key):
    value = base64.b64encode(b"hello file").decode()
    response = _run(client, make_key(), json={"slug": "shout-file", "input": value})
    assert response.status_code == 422
    assert response.get_json()["errors"]["document"] == [
        "The kind of file could not be told from its bytes; send text/plain."
    ]


def test_a_multipart_upload_with_typed_form_fields(client, make_key):
    response = _run(
        client,
        make_key(),
        data={
            "slug": "shout-file",
            "times": "2",
            "input": (io.BytesIO(b"ab"), "note.txt", "text/plain"),
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 200, response.get_json()
    assert _fetched(client, response.get_json()["output"]) == b"ABAB"


def test_a_file_of_the_wrong_type_is_a_field_error(client, make_key):
    png = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"0" * 20).decode()
    response = _run(client, make_key(), json={"slug": "shout-file", "document": png})
    assert response.status_code == 422
    assert "document" in response.get_json()["errors"]


def test_a_file_for_a_text_field_is_refused(client, make_key):
    response = _run(
        client,
        make_key(),
        data={"slug": "word-counter", "text": (io.BytesIO(b"ab"), "a.txt", "text/plain")},
        content_type="multipart/form-data",
    )
    assert response.status_code == 422
    assert response.get_json()["errors"]["text"] == ["This field takes no file."]


@pytest.fixture
def file_server():
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.write(b"from")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/file.txt"
    server.shutdown()
    server.server_close()


def test_a_url_is_fetched_through_the_guard(client, make_key, file_server, app):
    raw = make_key()
    refused = _run(client, raw, json={"slug": "shout-file", "input": file_server})
    assert refused.status_code == 422
    assert "document" in refused.get_json()["errors"]
    app.config["FETCH_ALLOW_PRIVATE"] = True
    response = _run(client, raw, json={"slug": "shout-file", "input": file_server})
    assert response.status_code == 200, response.get_json()
    assert _fetched(client, response.get_json()["output"]) == b"FROM"


def test_a_queued_run_reads_its_stored_file(embedded_app):
    from extensions import db
    from services import accounts, keys

    account = accounts.create_account("files@example.com", "pro")
    _key, raw = keys.create_key(account, "files")
    db.session.commit()
    client = embedded_app.test_client()
    response = client.post(
        "/v1/tools/run",
        headers={**auth(raw), "Prefer": "respond-async"},
        json={"slug": "shout-file", "input": "data:text/plain,queued"},
    )
    assert response.status_code == 202
    record = _until_ended(client, raw, response.headers["Location"])
    assert record["status"] == "succeeded", record
    assert _fetched(client, record["output"]) == b"QUEUED"
