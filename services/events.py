"""Run events (``tool.completed``, ``tool.failed``) and their signed webhook payloads.

The payload has exactly the spec's fields (DESIGN.md section 8). The body field
``signature`` is ``sha256=`` + HMAC-SHA256 (key: the whole ``whsec_…`` secret as UTF-8) of
the canonical JSON of the payload without ``signature`` (keys sorted, separators ``,`` and
``:``, UTF-8); the ``X-SVC-Signature`` header is the same HMAC of the exact raw body sent;
the Standard Webhooks headers sign ``id.timestamp.body`` with the base64-decoded secret.
Delivery is the simple form until the webhooks issue lands: one attempt, no retries.
"""

import base64
import hashlib
import hmac
import json

from models import Run
from services import clock

EXCERPT_LENGTH = 280


def output_excerpt(run: Run) -> str:
    """The first 280 characters of the output as text (of the error for failures)."""
    if run.status != "succeeded":
        text = (run.error or {}).get("message", run.status)
    elif isinstance(run.output, dict) and isinstance(run.output.get("text"), str):
        text = run.output["text"]
    else:
        text = json.dumps(run.output, ensure_ascii=False, separators=(",", ":"))
    return text[:EXCERPT_LENGTH]


def run_event(run: Run) -> dict:
    """The payload (without ``delivered_at`` and ``signature``) of a run's end."""
    return {
        "event": "tool.completed" if run.status == "succeeded" else "tool.failed",
        "run_id": run.id,
        "tool": run.tool_slug,
        "duration_ms": run.duration_ms or 0,
        "output_excerpt": output_excerpt(run),
    }


def canonical(payload: dict) -> bytes:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _hmac_hex(secret: str, data: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), data, hashlib.sha256).hexdigest()


def signed_delivery(event: dict, secret: str, webhook_id: str) -> tuple[bytes, dict]:
    """The body and headers of one delivery of ``event``, stamped now."""
    payload = {**event, "delivered_at": clock.now().isoformat().replace("+00:00", "Z")}
    payload["signature"] = _hmac_hex(secret, canonical(payload))
    body = json.dumps(payload, ensure_ascii=False).encode()
    timestamp = str(int(clock.now().timestamp()))
    key = base64.b64decode(secret.removeprefix("whsec_"))
    standard = hmac.new(key, f"{webhook_id}.{timestamp}.".encode() + body, hashlib.sha256)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "svc-webhooks/1",
        "X-SVC-Signature": _hmac_hex(secret, body),
        "webhook-id": webhook_id,
        "webhook-timestamp": timestamp,
        "webhook-signature": "v1," + base64.b64encode(standard.digest()).decode(),
    }
    return body, headers
