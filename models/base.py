"""Column helpers shared by every model."""

import os
import time
from datetime import UTC, datetime

_VERSION_7 = 0x7 << 76
_RFC_VARIANT = 0b10 << 62
_VERSION_AND_VARIANT_BITS = (0xF << 76) | (0b11 << 62)


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_uuid() -> str:
    """A UUIDv7 (RFC 9562): the Unix time in milliseconds, then 74 random bits.

    Ids made later sort later, so new rows land at the end of a primary-key index instead
    of on a random page of it: inserting a run cost PostgreSQL about a fifth more CPU with
    random (version 4) ids (docs/contributing/benchmarks/api-overhead.md). The random bits
    keep ids unguessable.
    """
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    value = value & ~_VERSION_AND_VARIANT_BITS | _VERSION_7 | _RFC_VARIANT
    digits = f"{value:032x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"
