"""The S3-compatible bucket behind services/storage.py: AWS S3, MinIO, Cloudflare R2, Wasabi,
Backblaze B2, DigitalOcean Spaces, Ceph.

boto3 does the talking: SigV4 signing, retries with backoff, connection pooling and the
providers' quirks are its job, and a home-made client would have to earn the same trust. It
is imported when the first file is written or read, not at start-up (about 0.7 s), so that a
release phase or a CLI command never pays for it. Every call is bounded: connect and read
timeouts, ``S3_MAX_ATTEMPTS`` attempts in all. A bucket that cannot be reached, or that
refuses us (credentials, a missing bucket), raises ``StorageUnavailable`` (503) and is
logged for the operator; a missing object raises ``FileGone``.

Compatibility: with ``S3_ENDPOINT_URL`` set, requests use path-style addressing, which every
S3-compatible store accepts; checksums are sent only when an operation requires them
(botocore's newer default sends CRC32 trailers that several of them refuse).
"""

import logging
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

from models import StoredFile
from services.storage import FileGone, StorageConfigError, StorageUnavailable

log = logging.getLogger(__name__)

CHUNK_BYTES = 256 * 1024
# Error codes of a missing object (HEAD requests only get the status).
_MISSING = {"NoSuchKey", "404", "NotFound"}


@dataclass(frozen=True)
class S3Settings:
    bucket: str
    endpoint_url: str | None
    region: str
    access_key_id: str | None
    secret_access_key: str | None
    prefix: str
    connect_timeout: float
    read_timeout: float
    max_attempts: int

    @classmethod
    def from_config(cls, config: Mapping) -> "S3Settings":
        """The settings, checked; raises StorageConfigError listing every problem."""
        problems: list[str] = []
        bucket = (config.get("S3_BUCKET") or "").strip()
        if not bucket:
            problems.append("S3_BUCKET (the bucket's name) is not set")
        elif "/" in bucket or any(char.isspace() for char in bucket):
            problems.append(f"S3_BUCKET={bucket!r} is not a bucket name")
        endpoint = (config.get("S3_ENDPOINT_URL") or "").strip() or None
        if endpoint:
            parts = urlsplit(endpoint)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                problems.append(
                    f"S3_ENDPOINT_URL={endpoint!r} is not an http(s) URL "
                    "(e.g. https://<account>.r2.cloudflarestorage.com or http://minio:9000)"
                )
        key_id = (config.get("S3_ACCESS_KEY_ID") or "").strip() or None
        secret = (config.get("S3_SECRET_ACCESS_KEY") or "").strip() or None
        if bool(key_id) != bool(secret):
            given, missing = (
                ("S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY")
                if key_id
                else ("S3_SECRET_ACCESS_KEY", "S3_ACCESS_KEY_ID")
            )
            problems.append(f"{given} is set but {missing} is not (set both, or neither)")
        connect_timeout = _positive(config, "S3_CONNECT_TIMEOUT", float, problems)
        read_timeout = _positive(config, "S3_READ_TIMEOUT", float, problems)
        max_attempts = _positive(config, "S3_MAX_ATTEMPTS", int, problems)
        if problems:
            raise StorageConfigError(
                "File storage in an S3 bucket is not configured correctly: "
                + "; ".join(problems)
                + ". See docs/operating/storage.md."
            )
        return cls(
            bucket=bucket,
            endpoint_url=endpoint,
            region=(config.get("S3_REGION") or "").strip() or "us-east-1",
            access_key_id=key_id,
            secret_access_key=secret,
            prefix=(config.get("S3_PREFIX") or "").strip().strip("/"),
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_attempts=max_attempts,
        )

    def key(self, file_id: str) -> str:
        return f"{self.prefix}/{file_id}" if self.prefix else file_id


def _positive(config: Mapping, name: str, kind: type, problems: list[str]):
    value = config.get(name)
    try:
        number = kind(value)
    except (TypeError, ValueError):
        number = None
    if number is None or number <= 0:
        problems.append(f"{name}={value!r} is not a positive {kind.__name__}")
    return number


class S3Backend:
    """The bytes in a bucket, one object per file; safe to share between threads."""

    name = "s3"

    def __init__(self, settings: S3Settings) -> None:
        self.settings = settings
        self._client = None
        self._lock = threading.Lock()

    @property
    def client(self):
        """The boto3 client, made on first use (clients are thread-safe; making one is not)."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = _new_client(self.settings)
        return self._client

    def write(self, stored: StoredFile, data: bytes) -> bytes:
        with self._errors("write", stored.id):
            self.client.put_object(
                Bucket=self.settings.bucket,
                Key=self.settings.key(stored.id),
                Body=data,
                ContentType=stored.content_type,
            )
        return b""

    def chunks(self, stored: StoredFile, start: int, stop: int) -> Iterator[bytes]:
        if start >= stop:
            return iter(())
        with self._errors("read", stored.id):
            answer = self.client.get_object(
                Bucket=self.settings.bucket,
                Key=self.settings.key(stored.id),
                Range=f"bytes={start}-{stop - 1}",
            )
        body = answer["Body"]
        if answer.get("ContentLength") != stop - start:
            body.close()
            log.error(
                "S3 object for file %s has %s bytes in range %s-%s, not %s",
                stored.id,
                answer.get("ContentLength"),
                start,
                stop - 1,
                stop - start,
            )
            raise FileGone(stored.id)
        return self._drain(body, stored.id)

    def remove(self, stored: StoredFile) -> None:
        with self._errors("delete", stored.id):
            self.client.delete_object(Bucket=self.settings.bucket, Key=self.settings.key(stored.id))

    def _drain(self, body, file_id: str) -> Iterator[bytes]:
        try:
            with self._errors("read", file_id):
                yield from body.iter_chunks(CHUNK_BYTES)
        finally:
            body.close()

    @contextmanager
    def _errors(self, action: str, file_id: str):
        """botocore's errors as the storage interface's: FileGone or StorageUnavailable."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            yield
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code in _MISSING and action == "read":
                raise FileGone(file_id) from error
            log.error(
                "S3 bucket %s refused to %s file %s: %s",
                self.settings.bucket,
                action,
                file_id,
                error,
            )
            raise StorageUnavailable() from error
        except BotoCoreError as error:
            log.warning(
                "S3 bucket %s unreachable to %s file %s: %s",
                self.settings.bucket,
                action,
                file_id,
                error,
            )
            raise StorageUnavailable() from error


def _new_client(settings: S3Settings):
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=settings.connect_timeout,
        read_timeout=settings.read_timeout,
        retries={"mode": "standard", "total_max_attempts": settings.max_attempts},
        s3={"addressing_style": "path" if settings.endpoint_url else "auto"},
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
    # A session of its own: boto3's default session is not thread-safe.
    return boto3.session.Session().client(
        "s3",
        endpoint_url=settings.endpoint_url,
        region_name=settings.region,
        aws_access_key_id=settings.access_key_id,
        aws_secret_access_key=settings.secret_access_key,
        config=config,
    )
