"""/v1/files/{file_id}: GET the bytes with their headers, no key, conditional and ranged;
DELETE by the owner's key. Every test runs on both backends (the database and a bucket)."""

import hashlib

import pytest

from blueprints.api.files.schemas import StoredFileSchema
from engines.blob import Blob
from extensions import db
from services import accounts, keys, storage
from tests.helpers import auth

WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(range(256)) * 8


@pytest.fixture(params=["app", "s3_app"], ids=["database", "s3"])
def backend_app(request):
    return request.getfixturevalue(request.param)


@pytest.fixture
def client(backend_app):
    return backend_app.test_client()


@pytest.fixture
def owner(backend_app):
    """The account the stored files belong to."""
    account = accounts.create_account("files@example.com", "creator")
    db.session.commit()
    return account


def key_of(account) -> str:
    """A new raw key of ``account``."""
    raw = keys.create_key(account, "files")[1]
    db.session.commit()
    return raw


@pytest.fixture
def store(owner):
    """Store a blob for the owner, committed; returns the file id."""

    def put(data: bytes = WAV, content_type: str = "audio/wav", filename: str | None = None):
        file_id = storage.put(Blob(data, content_type, filename), account_id=owner.id).id
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


def test_open_ended_and_suffix_ranges(client, store):
    file_id = store()
    assert client.get(f"/v1/files/{file_id}", headers={"Range": "bytes=2000-"}).data == WAV[2000:]
    last = client.get(f"/v1/files/{file_id}", headers={"Range": "bytes=-5"})
    assert (last.status_code, last.data) == (206, WAV[-5:])
    assert last.headers["Content-Range"] == f"bytes {len(WAV) - 5}-{len(WAV) - 1}/{len(WAV)}"


def test_if_range_with_another_etag_gets_the_whole_file(client, store):
    file_id = store()
    headers = {"Range": "bytes=4-11", "If-Range": '"other"'}
    response = client.get(f"/v1/files/{file_id}", headers=headers)
    assert (response.status_code, response.data) == (200, WAV)
    etag = response.headers["ETag"]
    matching = client.get(f"/v1/files/{file_id}", headers={**headers, "If-Range": etag})
    assert (matching.status_code, matching.data) == (206, WAV[4:12])


def test_an_empty_file_is_served_empty(client, store):
    response = client.get(f"/v1/files/{store(b'', 'text/plain')}")
    assert (response.status_code, response.data) == (200, b"")
    assert response.headers["Content-Length"] == "0"


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


def test_the_owner_deletes_a_file_and_its_url_is_gone(client, store, owner):
    file_id, other = store(), store()
    response = client.delete(f"/v1/files/{file_id}", headers=auth(key_of(owner)))
    assert response.status_code == 204
    assert response.data == b""
    gone = client.get(f"/v1/files/{file_id}")
    assert (gone.status_code, gone.get_json()["code"]) == (404, "file_not_found")
    assert client.get(f"/v1/files/{other}").data == WAV


def test_another_account_cannot_delete_a_file_nor_learn_it_exists(client, store):
    file_id = store()
    stranger = key_of(accounts.create_account("stranger@example.com", "pro"))
    response = client.delete(f"/v1/files/{file_id}", headers=auth(stranger))
    unknown = client.delete(f"/v1/files/{'B' * 32}", headers=auth(stranger))
    for refused in (response, unknown):
        assert refused.status_code == 404
        assert refused.mimetype == "application/problem+json"
        assert refused.get_json()["code"] == "file_not_found"
    assert response.get_json()["detail"] == unknown.get_json()["detail"]
    assert client.get(f"/v1/files/{file_id}").data == WAV


@pytest.mark.parametrize("headers", [{}, {"X-SVC-API-Key": "svc_bogus"}])
def test_deleting_needs_a_valid_key(client, store, headers):
    file_id = store()
    response = client.delete(f"/v1/files/{file_id}", headers=headers)
    assert response.status_code == 401
    assert response.get_json()["code"] == "invalid_api_key"
    assert client.get(f"/v1/files/{file_id}").status_code == 200


def test_post_is_not_allowed(client, store):
    response = client.post(f"/v1/files/{store()}")
    assert response.status_code == 405
    assert response.get_json()["code"] == "method_not_allowed"


def test_openapi_documents_a_deletion_by_key(client):
    operation = client.get("/v1/openapi.json").get_json()["paths"]["/v1/files/{file_id}"]
    delete = operation["delete"]
    assert delete["summary"].startswith("Delete a file of your account")
    assert {"ApiKeyHeader": []} in delete["security"]
    assert set(delete["responses"]) == {"204", "401", "404", "429", "503"}


def test_openapi_documents_a_public_binary_download(client):
    operation = client.get("/v1/openapi.json").get_json()["paths"]["/v1/files/{file_id}"]["get"]
    assert operation["security"] == []
    assert operation["summary"].startswith("Download a generated file")
    assert set(operation["responses"]) == {"200", "206", "304", "404", "410", "416", "503"}
    assert operation["responses"]["200"]["content"] == {
        "*/*": {"schema": {"type": "string", "format": "binary"}}
    }
    problem = operation["responses"]["404"]["content"]["application/problem+json"]["schema"]
    assert problem == {"$ref": "#/components/schemas/Problem"}
    assert "file_not_found" in operation["responses"]["404"]["description"]


def test_stored_file_schema_refers_to_the_file_by_url(store):
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
