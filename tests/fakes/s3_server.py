"""An S3-compatible bucket for tests: moto's server on a free loopback port, no internet.

A pytest plugin (``pytest_plugins`` in the root conftest.py): ``s3`` is the running server with
its bucket (``FakeS3``), ``s3_app`` the app storing files there. moto is imported only by
tests that ask for them.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from flask_migrate import upgrade

from app import create_app
from tests.helpers import HAVE_PG, app_config, clean

BUCKET = "svc-files"
PREFIX = "generated"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class FakeS3:
    """moto's S3 server in a thread, with one bucket, and a client to look inside it."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self.port = free_port()
        self.endpoint_url = f"http://127.0.0.1:{self.port}"
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)

    def __enter__(self) -> FakeS3:
        import boto3

        self._server.start()
        self.client = boto3.session.Session().client(
            "s3",
            endpoint_url=self.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id="test-key",
            aws_secret_access_key="test-secret",
        )
        self.client.create_bucket(Bucket=BUCKET)
        return self

    def __exit__(self, *exc) -> None:
        self.client.close()
        self._server.stop()

    def settings(self, **overrides) -> dict:
        """App settings storing files in this bucket."""
        return {
            "STORAGE_BACKEND": "s3",
            "S3_BUCKET": BUCKET,
            "S3_ENDPOINT_URL": self.endpoint_url,
            "S3_REGION": "us-east-1",
            "S3_ACCESS_KEY_ID": "test-key",
            "S3_SECRET_ACCESS_KEY": "test-secret",
            "S3_PREFIX": PREFIX,
            **overrides,
        }

    def key(self, file_id: str) -> str:
        return f"{PREFIX}/{file_id}"

    def get(self, file_id: str) -> dict | None:
        """The object of ``file_id`` (``Body`` read into bytes), or None."""
        try:
            answer = self.client.get_object(Bucket=BUCKET, Key=self.key(file_id))
        except self.client.exceptions.NoSuchKey:
            return None
        answer["Body"] = answer["Body"].read()
        return answer

    def remove(self, file_id: str) -> None:
        self.client.delete_object(Bucket=BUCKET, Key=self.key(file_id))


@pytest.fixture(scope="session")
def s3() -> Iterator[FakeS3]:
    with FakeS3() as server:
        yield server


def storage_app(**settings):
    """An app on the test database with these settings (a generator for ``yield from``)."""
    app = create_app(app_config(**settings))
    if not HAVE_PG:
        with app.app_context():
            upgrade()
    yield from clean(app)


@pytest.fixture
def s3_app(_schema, s3):
    """The app on PostgreSQL and Redis, its files in the fake bucket."""
    yield from storage_app(**s3.settings())
