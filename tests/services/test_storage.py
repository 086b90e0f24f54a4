"""Stored files through one interface: the database backend on PostgreSQL and SQLite and the
S3 backend (a fake bucket), ids, URLs. What only the bucket does: test_storage_s3.py."""

import hashlib
import itertools
import re
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from engines.blob import Blob
from extensions import db
from models import StoredFile
from services import accounts, storage
from tests.helpers import needs_pg

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
_emails = itertools.count(1)


@pytest.fixture(params=["app", "embedded_app", "s3_app"], ids=["postgresql", "sqlite", "s3"])
def any_app(request):
    """The same tests on the production database, the embedded default and a bucket."""
    return request.getfixturevalue(request.param)


@pytest.fixture(params=["app", "s3_app"], ids=["database", "s3"])
def backend_app(request):
    """The same tests on each backend."""
    return request.getfixturevalue(request.param)


def new_account_id() -> int:
    account = accounts.create_account(f"files{next(_emails)}@example.com", "creator")
    db.session.commit()
    return account.id


def test_put_then_get_returns_the_same_bytes_and_metadata(any_app):
    account_id = new_account_id()
    before = datetime.now(UTC)
    file_id = storage.put(
        Blob(PNG, "image/png", "cat.png"), account_id=account_id, run_id="run-1"
    ).id
    db.session.commit()
    db.session.remove()  # a fresh session: the row really comes back from the database

    found, data = storage.get(file_id)
    assert data == PNG
    assert found.account_id == account_id
    assert found.run_id == "run-1"
    assert found.content_type == "image/png"
    assert found.filename == "cat.png"
    assert found.size == len(PNG)
    assert found.sha256 == hashlib.sha256(PNG).hexdigest()
    assert before - timedelta(seconds=1) <= found.created_at.replace(tzinfo=UTC)
    assert found.created_at.replace(tzinfo=UTC) <= datetime.now(UTC) + timedelta(seconds=1)


def test_ids_are_long_random_url_safe_tokens(app):
    account_id = new_account_id()
    ids = {storage.put(Blob(b"x", "text/plain"), account_id=account_id).id for _ in range(50)}
    assert len(ids) == 50
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{32}", file_id) for file_id in ids)


def test_put_flushes_but_leaves_the_commit_to_the_caller(backend_app):
    account_id = new_account_id()
    stored = storage.put(Blob(b"draft", "text/plain"), account_id=account_id)
    assert storage.find(stored.id) is stored
    db.session.rollback()
    assert storage.find(stored.id) is None


def test_put_keeps_only_the_base_name_and_a_lower_case_type(app):
    account_id = new_account_id()
    stored = storage.put(Blob(b"RIFF", " Audio/WAV ", "..\\x/../voice.wav"), account_id=account_id)
    assert (stored.content_type, stored.filename) == ("audio/wav", "voice.wav")
    untyped = storage.put(Blob(b"?", ""), account_id=account_id)
    assert (untyped.content_type, untyped.filename) == ("application/octet-stream", None)


@pytest.mark.parametrize("content_type", ["text/plain\r\nX-Evil: 1", "image/pngé", "\t"])
def test_a_type_that_cannot_be_a_header_is_stored_as_octet_stream(backend_app, content_type):
    stored = storage.put(Blob(b"?", content_type), account_id=new_account_id())
    assert stored.content_type == "application/octet-stream"
    assert storage.read(stored) == b"?"


def test_find_does_not_load_the_bytes(backend_app):
    account_id = new_account_id()
    file_id = storage.put(Blob(PNG, "image/png"), account_id=account_id).id
    db.session.commit()
    db.session.remove()
    found = storage.find(file_id)
    assert "data" not in sa.inspect(found).dict
    assert storage.read(found) == PNG


def test_stream_gives_the_asked_bytes_in_chunks(backend_app):
    account_id = new_account_id()
    stored = storage.put(Blob(PNG, "image/png"), account_id=account_id)
    db.session.commit()
    assert b"".join(storage.stream(stored)) == PNG
    assert b"".join(storage.stream(stored, 100, 4000)) == PNG[100:4000]
    assert b"".join(storage.stream(stored, 5, 5)) == b""


def test_an_empty_file_is_stored_and_read_back(backend_app):
    stored = storage.put(Blob(b"", "text/plain"), account_id=new_account_id())
    db.session.commit()
    assert (stored.size, storage.read(stored)) == (0, b"")


def test_delete_removes_the_file(backend_app):
    account_id = new_account_id()
    file_id = storage.put(Blob(PNG, "image/png"), account_id=account_id).id
    kept = storage.put(Blob(b"other", "text/plain"), account_id=account_id).id
    db.session.commit()
    storage.delete(storage.find(file_id))
    db.session.commit()
    db.session.remove()
    assert storage.find(file_id) is None
    with pytest.raises(storage.FileNotFound):
        storage.get(file_id)
    assert storage.get(kept)[1] == b"other"


@pytest.mark.parametrize("file_id", ["nope", "x" * 32, "a/b" * 11, "", "é" * 30, "z" * 65])
def test_unknown_or_malformed_ids_are_not_found(backend_app, file_id):
    assert storage.find(file_id) is None
    with pytest.raises(storage.FileNotFound):
        storage.get(file_id)


def test_url_honours_public_base_url(app):
    app.config["PUBLIC_BASE_URL"] = "https://files.example.com/"
    assert storage.url_for("abc") == "https://files.example.com/v1/files/abc"


def test_url_outside_a_request_is_on_the_public_base_url(app):
    assert storage.url_for("abc") == "https://svc.test/v1/files/abc"  # a worker's job


def test_url_inside_a_request_ignores_the_request_host(app):
    with app.test_request_context("/v1/tools", base_url="http://evil.example:5000"):
        assert storage.url_for("abc") == "https://svc.test/v1/files/abc"


@needs_pg
def test_deleting_the_account_deletes_its_files(app):
    account_id = new_account_id()
    file_id = storage.put(Blob(b"x", "text/plain"), account_id=account_id).id
    db.session.commit()
    db.session.execute(sa.text("DELETE FROM accounts WHERE id = :id"), {"id": account_id})
    db.session.commit()
    assert db.session.get(StoredFile, file_id) is None


@needs_pg
def test_bytes_are_stored_out_of_line_without_compression_on_postgresql(app):
    storage_kind = db.session.scalar(
        sa.text(
            "SELECT attstorage FROM pg_attribute "
            "WHERE attrelid = 'stored_files'::regclass AND attname = 'data'"
        )
    )
    assert storage_kind == "e"
