"""The S3 backend on a fake bucket (moto's server on loopback): where the bytes go, missing
objects, an unreachable or refusing bucket, bounded waits, and the settings checked at start."""

import hashlib
import logging
import socket
import threading
import time

import pytest

from app import create_app
from config import Config
from engines.blob import Blob
from extensions import db
from services import accounts, storage
from services.storage.s3 import S3Backend
from tests.fakes.s3_server import BUCKET, free_port
from tests.helpers import app_config

DEFAULTS = {name: getattr(Config, name) for name in dir(Config) if name.isupper()}
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40


def new_account_id() -> int:
    account = accounts.create_account(f"s3-{time.monotonic_ns()}@example.com", "creator")
    db.session.commit()
    return account.id


def use_backend(app, **overrides) -> S3Backend:
    """Swap the app's backend for one built from its settings with ``overrides``."""
    backend = storage.backend_for({**app.config, **overrides})
    app.extensions["storage"] = backend
    return backend


def put(data: bytes = PNG, content_type: str = "image/png", filename: str | None = "cat.png"):
    stored = storage.put(Blob(data, content_type, filename), account_id=new_account_id())
    db.session.commit()
    return stored


def test_the_bytes_go_to_the_bucket_and_the_metadata_to_the_database(s3_app, s3):
    file_id = put().id
    db.session.remove()
    row = storage.find(file_id)
    assert (row.size, row.sha256) == (len(PNG), hashlib.sha256(PNG).hexdigest())
    assert (row.content_type, row.filename) == ("image/png", "cat.png")
    assert row.data == b""
    obj = s3.get(file_id)
    assert obj["Body"] == PNG
    assert obj["ContentType"] == "image/png"


def test_without_a_prefix_the_key_is_the_file_id(s3_app, s3):
    use_backend(s3_app, S3_PREFIX="")
    stored = put(b"bare")
    answer = s3.client.get_object(Bucket=BUCKET, Key=stored.id)
    assert answer["Body"].read() == b"bare"


def test_delete_removes_the_object(s3_app, s3):
    stored = put()
    storage.delete(stored)
    db.session.commit()
    assert s3.get(stored.id) is None


def test_a_missing_object_is_gone_before_any_byte_is_read(s3_app, s3):
    stored = put()
    s3.remove(stored.id)
    with pytest.raises(storage.FileGone):
        storage.stream(stored)
    with pytest.raises(storage.FileNotFound):  # FileGone is a FileNotFound to callers
        storage.get(stored.id)


def test_an_object_shorter_than_its_row_says_is_gone(s3_app, s3, caplog):
    stored = put()
    s3.client.put_object(Bucket=BUCKET, Key=s3.key(stored.id), Body=PNG[:10])
    with pytest.raises(storage.FileGone):
        storage.stream(stored)
    assert "has 10 bytes" in caplog.text


def test_files_kept_in_the_database_are_still_read_once_a_bucket_is_configured(s3_app, s3):
    s3_app.extensions["storage"] = storage.DatabaseBackend()
    file_id = put(b"kept in the row").id
    use_backend(s3_app)
    db.session.remove()
    found = storage.find(file_id)
    assert storage.read(found) == b"kept in the row"
    assert b"".join(storage.stream(found, 5, 7)) == b"in"
    assert s3.get(file_id) is None


def test_without_the_bucket_a_file_written_there_is_unavailable_not_empty(s3_app, caplog):
    stored = put()
    s3_app.extensions["storage"] = storage.DatabaseBackend()
    with pytest.raises(storage.StorageUnavailable):
        storage.read(stored)
    assert "STORAGE_BACKEND is database" in caplog.text


def test_an_unreachable_bucket_is_unavailable_and_logged(s3_app, caplog):
    stored = put()
    use_backend(s3_app, S3_ENDPOINT_URL=f"http://127.0.0.1:{free_port()}", S3_MAX_ATTEMPTS=2)
    with caplog.at_level(logging.WARNING), pytest.raises(storage.StorageUnavailable) as raised:
        storage.put(Blob(b"x", "text/plain"), account_id=stored.account_id)
    assert raised.value.retry_after == 30
    assert "svc-files unreachable to write" in caplog.text
    with pytest.raises(storage.StorageUnavailable):
        storage.stream(stored)
    with pytest.raises(storage.StorageUnavailable):
        storage.delete(stored)
    db.session.rollback()
    assert storage.find(stored.id) is not None


def test_a_bucket_that_refuses_us_is_unavailable_and_logged_as_an_error(s3_app, caplog):
    stored = put()
    use_backend(s3_app, S3_BUCKET="no-such-bucket")
    with pytest.raises(storage.StorageUnavailable):
        storage.stream(stored)
    with pytest.raises(storage.StorageUnavailable):
        storage.put(Blob(b"x", "text/plain"), account_id=stored.account_id)
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("no-such-bucket refused to write" in message for message in errors)


@pytest.fixture
def silent_server():
    """A TCP server that accepts connections and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for connection in accepted:
        connection.close()
    listener.close()


def test_a_bucket_that_never_answers_is_given_up_on_within_the_bounds(s3_app, silent_server):
    stored = put()
    use_backend(s3_app, S3_ENDPOINT_URL=silent_server, S3_READ_TIMEOUT=0.3, S3_MAX_ATTEMPTS=2)
    started = time.monotonic()
    with pytest.raises(storage.StorageUnavailable):
        storage.stream(stored)
    # Two attempts of 0.3 s and standard mode's backoff (under a second) between them: well
    # under 10 s even on a loaded machine (2.7 s seen with the suite on two processes), far
    # from botocore's own 60 s read timeout that a missing bound would wait.
    assert 0.6 <= time.monotonic() - started < 10


def test_the_client_is_bounded_and_speaks_path_style_to_custom_endpoints(s3_app, s3):
    backend = use_backend(s3_app, S3_CONNECT_TIMEOUT="2", S3_READ_TIMEOUT="7", S3_MAX_ATTEMPTS="4")
    config = backend.client.meta.config
    assert (config.connect_timeout, config.read_timeout) == (2.0, 7.0)
    assert config.retries == {"mode": "standard", "total_max_attempts": 4}
    assert config.s3 == {"addressing_style": "path"}
    assert backend.client.meta.endpoint_url == s3.endpoint_url
    assert backend.client.meta.region_name == "us-east-1"


# The start-up check: settings (besides the test defaults) -> the message's telling part.
_REFUSED = [
    ({"STORAGE_BACKEND": "s3"}, "S3_BUCKET (the bucket's name) is not set"),
    ({"STORAGE_BACKEND": "disk"}, "STORAGE_BACKEND='disk' is not a storage backend"),
    ({"S3_BUCKET": "a/b"}, "S3_BUCKET='a/b' is not a bucket name"),
    ({"S3_BUCKET": "b", "S3_ENDPOINT_URL": "minio:9000"}, "S3_ENDPOINT_URL='minio:9000' is not"),
    (
        {"S3_BUCKET": "b", "S3_ACCESS_KEY_ID": "AKIA"},
        "S3_ACCESS_KEY_ID is set but S3_SECRET_ACCESS_KEY is not",
    ),
    (
        {"S3_BUCKET": "b", "S3_SECRET_ACCESS_KEY": "s"},
        "S3_SECRET_ACCESS_KEY is set but S3_ACCESS_KEY_ID is not",
    ),
    ({"S3_BUCKET": "b", "S3_READ_TIMEOUT": "soon"}, "S3_READ_TIMEOUT='soon' is not a positive"),
    ({"S3_BUCKET": "b", "S3_MAX_ATTEMPTS": "0"}, "S3_MAX_ATTEMPTS='0' is not a positive int"),
]


@pytest.mark.parametrize(("settings", "message"), _REFUSED)
def test_incomplete_settings_are_refused_with_a_clear_message(settings, message):
    with pytest.raises(storage.StorageConfigError) as refused:
        storage.backend_for({**DEFAULTS, **settings})
    assert message in str(refused.value)


def test_the_app_refuses_to_start_with_incomplete_settings():
    with pytest.raises(storage.StorageConfigError) as refused:
        create_app(app_config(STORAGE_BACKEND="s3", S3_ACCESS_KEY_ID="AKIA", S3_PREFIX="x"))
    text = str(refused.value)
    assert text.startswith("File storage in an S3 bucket is not configured correctly: ")
    assert "S3_BUCKET" in text and "S3_SECRET_ACCESS_KEY is not" in text


_ENVIRONMENT = ("STORAGE_BACKEND", "S3_BUCKET", "S3_ENDPOINT_URL", "S3_REGION", "S3_PREFIX")


@pytest.fixture
def environment(monkeypatch):
    for name in (*_ENVIRONMENT, "AWS_REGION", "AWS_DEFAULT_REGION", "S3_ACCESS_KEY_ID"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_s3_bucket_alone_in_the_environment_selects_the_bucket(environment):
    environment.setenv("S3_BUCKET", " media ")
    environment.setenv("AWS_REGION", "eu-west-3")
    environment.setenv("S3_PREFIX", "/files/")
    backend = create_app(app_config()).extensions["storage"]
    assert backend.name == "s3"
    settings = backend.settings
    assert (settings.bucket, settings.region, settings.prefix) == ("media", "eu-west-3", "files")
    assert (settings.access_key_id, settings.secret_access_key) == (None, None)


def test_the_environment_is_refused_when_half_a_key_pair_is_set(environment):
    environment.setenv("S3_BUCKET", "media")
    environment.setenv("S3_ACCESS_KEY_ID", "AKIA")
    with pytest.raises(storage.StorageConfigError, match="S3_SECRET_ACCESS_KEY is not"):
        create_app(app_config())


def test_the_database_is_the_default_and_an_explicit_choice_wins(environment):
    assert create_app(app_config()).extensions["storage"].name == "database"
    environment.setenv("S3_BUCKET", "media")
    environment.setenv("STORAGE_BACKEND", "Database")
    assert create_app(app_config()).extensions["storage"].name == "database"
