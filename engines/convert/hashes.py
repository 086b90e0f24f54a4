"""Hashes, HMAC signatures, name-based UUIDs and JWT decoding (convert.digest)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from engines.base import ChoiceEngine, EngineError
from engines.convert._helpers import _parse_datetime, _parse_json, _utf8_text

_HASHES = ("md5", "sha1", "sha224", "sha256", "sha384", "sha512", "sha3_256", "sha3_512",
           "blake2b", "blake2s", "crc32")  # fmt: skip


def _digest(algorithm: str, data: bytes) -> bytes:
    import hashlib
    import zlib

    if algorithm == "crc32":
        return zlib.crc32(data).to_bytes(4, "big")
    return hashlib.new(algorithm, data).digest()


def _encode_digest(digest: bytes, encoding: str) -> str:
    import base64

    return digest.hex() if encoding == "hex" else base64.b64encode(digest).decode("ascii")


def _hashes(inputs: dict[str, Any]) -> dict[str, Any]:
    data = inputs["text"].encode("utf-8")
    algorithms = list(dict.fromkeys(inputs["algorithms"]))
    if not algorithms:
        raise EngineError("Choose at least one algorithm.")
    hashes = [
        {"algorithm": name, "digest": _encode_digest(_digest(name, data), inputs["encoding"])}
        for name in algorithms
    ]
    expected = inputs["compare_with"].strip().lower()
    matches = [h["algorithm"] for h in hashes if expected and h["digest"].lower() == expected]
    return {"bytes": len(data), "hashes": hashes, "matches": matches if expected else None}


def _key_bytes(key: str, encoding: str) -> bytes:
    import base64
    import binascii

    try:
        if encoding == "hex":
            return bytes.fromhex(key)
        if encoding == "base64":
            return base64.b64decode(key + "=" * (-len(key) % 4), validate=True)
    except (ValueError, binascii.Error):
        raise EngineError(f"The key is not valid {encoding}.") from None
    return key.encode("utf-8")


def _hmac(inputs: dict[str, Any]) -> dict[str, Any]:
    import hmac

    key = _key_bytes(inputs["key"], inputs["key_encoding"])
    digest = hmac.new(key, inputs["message"].encode("utf-8"), inputs["algorithm"]).digest()
    signature = _encode_digest(digest, inputs["encoding"])
    expected = inputs["compare_with"].strip()
    if inputs["encoding"] == "hex":
        expected = expected.lower()
    return {
        "signature": signature,
        "algorithm": inputs["algorithm"],
        "matches": hmac.compare_digest(signature, expected) if expected else None,
    }


def _namespace_uuid(namespace: str) -> Any:
    import uuid

    named = {"dns": uuid.NAMESPACE_DNS, "url": uuid.NAMESPACE_URL, "oid": uuid.NAMESPACE_OID,
             "x500": uuid.NAMESPACE_X500}  # fmt: skip
    if namespace.lower() in named:
        return named[namespace.lower()]
    try:
        return uuid.UUID(namespace)
    except ValueError:
        raise EngineError(
            f"'{namespace}' is not a namespace: use dns, url, oid, x500 or a UUID."
        ) from None


def _name_uuids(inputs: dict[str, Any]) -> dict[str, Any]:
    import uuid

    namespace = _namespace_uuid(inputs["namespace"].strip())
    names = [line for line in inputs["names"].splitlines() if line.strip()]
    if len(names) > 1000:
        raise EngineError(f"Give at most 1,000 names; there are {len(names):,}.")
    make = uuid.uuid5 if inputs["version"] == 5 else uuid.uuid3
    return {
        "namespace": str(namespace),
        "version": inputs["version"],
        "uuids": [{"name": name, "uuid": str(make(namespace, name))} for name in names],
    }


def _base64url_json(segment: str, what: str) -> Any:
    import base64
    import binascii

    try:
        data = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        raise EngineError(f"The JWT {what} is not base64url.") from None
    value = _parse_json(_utf8_text(data, f"The JWT {what}"), f"The JWT {what}")
    if not isinstance(value, dict):
        raise EngineError(f"The JWT {what} must be a JSON object.")
    return value


def _claim_time(payload: dict[str, Any], claim: str) -> datetime | None:
    value = payload.get(claim)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise EngineError(f"The '{claim}' claim must be a number of seconds since 1970.")
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        raise EngineError(f"The '{claim}' claim ({value}) is out of range.") from None


def _jwt_decode(inputs: dict[str, Any]) -> dict[str, Any]:
    import base64
    import hmac

    parts = inputs["token"].strip().removeprefix("Bearer ").strip().split(".")
    if len(parts) != 3:
        raise EngineError(
            f"A JWT has three parts separated by dots (header.payload.signature); this has "
            f"{len(parts)}."
        )
    header = _base64url_json(parts[0], "header")
    payload = _base64url_json(parts[1], "payload")
    algorithm = str(header.get("alg", ""))
    signature = "not checked"
    if inputs["secret"]:
        digests = {"HS256": "sha256", "HS384": "sha384", "HS512": "sha512"}
        if algorithm not in digests:
            signature = "unsupported algorithm"
        else:
            mac = hmac.new(
                inputs["secret"].encode(), f"{parts[0]}.{parts[1]}".encode(), digests[algorithm]
            ).digest()
            expected = base64.urlsafe_b64encode(mac).decode().rstrip("=")
            signature = "valid" if hmac.compare_digest(expected, parts[2]) else "invalid"
    now = _parse_datetime(inputs["now"], "UTC") if inputs["now"] else datetime.now(UTC)
    times = {claim: _claim_time(payload, claim) for claim in ("iat", "nbf", "exp")}
    return {
        "header": header,
        "payload": payload,
        "algorithm": algorithm,
        "issued_at": times["iat"] and times["iat"].isoformat(),
        "not_before": times["nbf"] and times["nbf"].isoformat(),
        "expires_at": times["exp"] and times["exp"].isoformat(),
        "expired": None if times["exp"] is None else now >= times["exp"],
        "signature": signature,
    }


class DigestEngine(ChoiceEngine):
    """Hashes, HMAC signatures, name-based UUIDs and JWT decoding."""

    name = "convert.digest"
    jobs = {
        "hash": _hashes,
        "hmac": _hmac,
        "uuid": _name_uuids,
        "jwt": _jwt_decode,
    }
