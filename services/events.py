"""Events (``tool.completed``, ``tool.failed``, ``workflow.completed``, ``workflow.failed``,
``webhook.test``) and their signed webhook deliveries (docs/architecture/webhooks.md).

The payload has exactly the spec's fields, plus ``workflow_id`` on workflow events. The body
field ``signature`` is ``sha256=`` + HMAC-SHA256 (key: the whole ``whsec_…`` secret as
UTF-8) of the canonical JSON of the payload without ``signature`` (keys sorted, separators
``,`` and ``:``, UTF-8); the ``X-SVC-Signature`` header is the same HMAC of the exact raw
body sent; the Standard Webhooks headers (``webhook-id``, ``webhook-timestamp``,
``webhook-signature: v1,<base64>``) sign ``id.timestamp.body`` with the base64-decoded
secret, so the ``standardwebhooks`` library verifies them. For a day after a rotation
``webhook-signature`` carries a second signature made with the previous secret, space
separated (``v1,<new> v1,<old>``), as Standard Webhooks allows; the ``signature`` field and
``X-SVC-Signature`` hold one value each and use the current secret only.
"""

import base64
import hashlib
import hmac
import json
from typing import Any, Protocol

from models import Run
from services import clock

EXCERPT_LENGTH = 280
EVENTS = ("tool.completed", "tool.failed", "workflow.completed", "workflow.failed", "webhook.test")
USER_AGENT = "svc-webhooks/1"


class EndedRun(Protocol):
    """A tool run or a workflow run that has ended (``models.Run``, ``models.WorkflowRun``)."""

    id: str
    status: str
    output: Any
    error: dict | None
    duration_ms: int | None


def output_excerpt(run: EndedRun) -> str:
    """The first 280 characters of the output as text: the error message for failures,
    the file URL(s) for binary outputs, the ``text`` field or else the JSON."""
    if run.status != "succeeded":
        text = (run.error or {}).get("message", run.status)
    elif isinstance(run.output, dict) and isinstance(run.output.get("text"), str):
        text = run.output["text"]
    elif urls := _file_urls(run.output):
        text = " ".join(urls)
    else:
        text = json.dumps(run.output, ensure_ascii=False, separators=(",", ":"))
    return text[:EXCERPT_LENGTH]


def _file_urls(output: Any) -> list[str]:
    """The URLs of the stored files in ``output`` (services.tool_files' file objects)."""
    if isinstance(output, list):
        return [url for item in output for url in _file_urls(item)]
    if not isinstance(output, dict):
        return []
    if isinstance(output.get("url"), str) and "content_type" in output and "id" in output:
        return [output["url"]]
    return [url for value in output.values() for url in _file_urls(value)]


def run_event(run: Run) -> dict:
    """The payload (without ``delivered_at`` and ``signature``) of a tool run's end."""
    return {
        "event": "tool.completed" if run.status == "succeeded" else "tool.failed",
        "run_id": run.id,
        "tool": run.tool_slug,
        "duration_ms": run.duration_ms or 0,
        "output_excerpt": output_excerpt(run),
    }


def workflow_event(run: EndedRun, workflow_id: str, tool: str) -> dict:
    """The payload of a workflow run's end; ``tool`` is the slug of the step that produced
    the final output (or that failed)."""
    return {
        "event": "workflow.completed" if run.status == "succeeded" else "workflow.failed",
        "run_id": run.id,
        "workflow_id": workflow_id,
        "tool": tool,
        "duration_ms": run.duration_ms or 0,
        "output_excerpt": output_excerpt(run),
    }


def webhook_test_event(event_id: str) -> dict:
    """The payload of ``webhook.test``: it belongs to no run, so ``run_id`` is made up."""
    return {
        "event": "webhook.test",
        "run_id": event_id.removeprefix("evt_"),
        "tool": "webhook.test",
        "duration_ms": 0,
        "output_excerpt": "A test event: your webhook receives and verifies our deliveries.",
    }


def canonical(payload: dict) -> bytes:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def iso_utc(moment) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _hmac_hex(secret: str, data: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), data, hashlib.sha256).hexdigest()


def signed_delivery(
    event: dict, secret: str, webhook_id: str, previous_secret: str | None = None
) -> tuple[bytes, dict]:
    """The body and headers of one delivery of ``event``, stamped now; with
    ``previous_secret``, ``webhook-signature`` holds its signature too, after the current
    secret's."""
    now = clock.now()
    payload = {**event, "delivered_at": iso_utc(now)}
    payload["signature"] = _hmac_hex(secret, canonical(payload))
    body = json.dumps(payload, ensure_ascii=False).encode()
    timestamp = str(int(now.timestamp()))
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    signatures = [_standard_signature(secret, signed)]
    if previous_secret:
        signatures.append(_standard_signature(previous_secret, signed))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-SVC-Signature": _hmac_hex(secret, body),
        "webhook-id": webhook_id,
        "webhook-timestamp": timestamp,
        "webhook-signature": " ".join(signatures),
    }
    return body, headers


def _standard_signature(secret: str, signed: bytes) -> str:
    """``v1,`` + base64 HMAC-SHA256 of ``signed`` keyed with the secret's decoded bytes."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
