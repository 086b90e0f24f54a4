"""GET /v1/files/{file_id}: the bytes with their headers, no key, conditional and ranged."""

import hashlib

import pytest

from blueprints.api.files.schemas import StoredFileSchema
from engines.blob import Blob
from extensions import db
from services import accounts, storage

WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(range(256)) * 8


@pytest.fixture
def store(app):
    """Store a blob for a new account, committed; returns the file id."""
    account = accounts.create_account("files@example.com", "creator")
    db.session.commit()

    def put(data: bytes = WAV, content_type: str = "audio/wav", filename: str | None = None):
        file_id = storage.put(Blob(data, content_type, filename), account_id=account.id).id
        db.session.commit()
        return file_id

    return put


def test_file_is_served_with_its_type_length_etag_and_caching(client, store):
    file_id = store(filename="hello.wav")
    response = client.get(f"/v1/files/{file_id}")
    assert response.status_code == 200
    assert response.data == WAV
    assert response.headers["Content-Type"] == "audio/wav"
    assert response.headers["Content-Length"] == str(len(WAV))
    assert response.headers["ETag"] == f'"{hashlib.sha256(WAV).hexdigest()}"'
    assert response.headers["Cache-Control"] == "private, max-age=86400, immutable"
    assert response.headers["Content-Disposition"] == "inline; filename=hello.wav"
    assert response.headers["Accept-Ranges"] == "bytes"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Request-Id"]


def test_no_api_key_is_needed_and_none_is_looked_at(client, store):
    file_id = store()
    response = client.get(f"/v1/files/{file_id}", headers={"X-SVC-API-Key": "svc_bogus"})
    assert response.status_code == 200
    assert "RateLimit" not in response.headers


@pytest.mark.parametrize("file_id", ["A" * 32, "short", "x" * 200])
def test_unknown_file_is_a_404_problem(client, store, file_id):
    store()
    response = client.get(f"/v1/files/{file_id}")
    assert response.status_code == 404
    assert response.mimetype == "application/problem+json"
    body = response.get_json()
    assert (body["code"], body["status"]) == ("file_not_found", 404)
    assert body["request_id"] == response.headers["X-Request-Id"]


def test_head_gives_the_headers_without_the_body(client, store):
    file_id = store()
    response = client.head(f"/v1/files/{file_id}")
    assert response.status_code == 200
    assert response.data == b""
    assert response.headers["Content-Length"] == str(len(WAV))
    assert response.headers["Content-Type"] == "audio/wav"


def test_matching_if_none_match_is_304_without_a_body(client, store):
    file_id = store()
    etag = client.get(f"/v1/files/{file_id}").headers["ETag"]
    response = client.get(f"/v1/files/{file_id}", headers={"If-None-Match": etag})
    assert response.status_code == 304
    assert response.data == b""
    assert response.headers["ETag"] == etag
    assert response.headers["Cache-Control"] == "private, max-age=86400, immutable"


def test_other_if_none_match_gets_the_file(client, store):
    file_id = store()
    response = client.get(f"/v1/files/{file_id}", headers={"If-None-Match": '"other"'})
    assert response.status_code == 200
    assert response.data == WAV


def test_range_request_gets_206_with_the_slice(client, store):
    file_id = store()
    response = client.get(f"/v1/files/{file_id}", headers={"Range": "bytes=4-11"})
    assert response.status_code == 206
    assert response.data == WAV[4:12]
    assert response.headers["Content-Range"] == f"bytes 4-11/{len(WAV)}"
    assert response.headers["Content-Length"] == "8"


def test_unsatisfiable_range_is_a_416_problem(client, store):
    file_id = store()
    response = client.get(f"/v1/files/{file_id}", headers={"Range": f"bytes={len(WAV) + 10}-"})
    assert response.status_code == 416
    assert response.mimetype == "application/problem+json"


def test_file_without_a_name_is_named_by_id_and_type(client, store):
    file_id = store(b"\x89PNG\r\n\x1a\n", "image/png")
    disposition = client.get(f"/v1/files/{file_id}").headers["Content-Disposition"]
    assert disposition == f"inline; filename={file_id}.png"


def test_non_ascii_file_name_is_sent_both_ways(client, store):
    file_id = store(filename="Grüße.wav")
    disposition = client.get(f"/v1/files/{file_id}").headers["Content-Disposition"]
    assert disposition == "inline; filename=Grue.wav; filename*=UTF-8''Gr%C3%BC%C3%9Fe.wav"


@pytest.mark.parametrize(
    ("content_type", "disposition"),
    [
        ("image/svg+xml", "inline"),
        ("video/mp4", "inline"),
        ("application/pdf", "inline"),
        ("text/html", "attachment"),
        ("application/octet-stream", "attachment"),
    ],
)
def test_only_media_types_are_shown_inline(client, store, content_type, disposition):
    file_id = store(b"<svg onload=alert(1)>", content_type, "f")
    response = client.get(f"/v1/files/{file_id}")
    assert response.headers["Content-Type"] == content_type
    assert response.headers["Content-Disposition"] == f"{disposition}; filename=f"
    assert response.headers["Content-Security-Policy"].endswith("; sandbox")


def test_post_is_not_allowed(client, store):
    response = client.post(f"/v1/files/{store()}")
    assert response.status_code == 405
    assert response.get_json()["code"] == "method_not_allowed"


def test_openapi_documents_a_public_binary_download(client):
    operation = client.get("/v1/openapi.json").get_json()["paths"]["/v1/files/{file_id}"]["get"]
    assert operation["security"] == []
    assert operation["summary"].startswith("Download a generated file")
    assert set(operation["responses"]) == {"200", "206", "304", "404", "416"}
    assert operation["responses"]["200"]["content"] == {
        "*/*": {"schema": {"type": "string", "format": "binary"}}
    }
    problem = operation["responses"]["404"]["content"]["application/problem+json"]["schema"]
    assert problem == {"$ref": "#/components/schemas/Problem"}
    assert "file_not_found" in operation["responses"]["404"]["description"]


def test_stored_file_schema_refers_to_the_file_by_url(app, store):
    file_id = store(filename="hello.wav")
    dumped = StoredFileSchema().dump(storage.find(file_id))
    assert dumped["url"] == f"https://svc.test/v1/files/{file_id}"
    assert dumped["id"] == file_id
    assert (dumped["content_type"], dumped["filename"], dumped["size"]) == (
        "audio/wav",
        "hello.wav",
        len(WAV),
    )
    assert dumped["sha256"] == hashlib.sha256(WAV).hexdigest()
    assert "data" not in dumped
