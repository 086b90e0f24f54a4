"""The site assistant's health (``GET /v1/health/chatbot``), in the shape of the IETF
health-check draft (``application/health+json``).

The provider's reachability comes from a probe kept for ``PROBE_SECONDS`` and refreshed on a
thread of its own, so a health request never waits on the provider nor calls it itself: the
first request after start (or after the settings change) reports the probe as pending. The
body names no URL, host, key, model or exception: only what each check observed.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass

from engines.models import providers
from engines.models._http import session
from engines.models.breaker import breaker_for
from engines.text import embedder
from services.assistant import current_index

log = logging.getLogger(__name__)

PROBE_SECONDS = 60.0
PROBE_TIMEOUT = (3.0, 5.0)  # connect, read


@dataclass(frozen=True)
class Probe:
    reachable: bool | None  # None: not probed yet
    at: float  # time.time() of the probe
    key: str  # the settings it probed (a hash)


_probe: Probe | None = None
_probing = threading.Lock()


def _settings_key(config) -> str:
    raw = f"{config.get('AI_BASE_URL')}\0{config.get('AI_API_KEY')}"
    return hashlib.sha256(raw.encode()).hexdigest()


def probe_now(config=None) -> Probe:
    """Ask the provider (``GET <base>/models``) whether it answers; keep and return the
    answer. Any answer below 500 other than 401/403 counts as reachable."""
    global _probe
    config = providers.settings() if config is None else config
    base = (config.get("AI_BASE_URL") or "").rstrip("/")
    reachable = False
    try:
        headers = {}
        if config.get("AI_API_KEY"):
            headers["Authorization"] = f"Bearer {config['AI_API_KEY']}"
        response = session().get(f"{base}/models", headers=headers, timeout=PROBE_TIMEOUT)
        reachable = response.status_code < 500 and response.status_code not in (401, 403)
        response.close()
    except Exception as error:  # the reason is logged by name only (URLs may hold secrets)
        log.info("The assistant's provider probe failed: %s", type(error).__name__)
    _probe = Probe(reachable, time.time(), _settings_key(config))
    return _probe


def cached_probe(config) -> Probe:
    """The last probe of these settings; a stale or missing one is refreshed in the
    background (this call never waits)."""
    key = _settings_key(config)
    found = _probe if _probe is not None and _probe.key == key else None
    if (found is None or time.time() - found.at >= PROBE_SECONDS) and _probing.acquire(False):
        settings = dict(config)

        def run():
            try:
                probe_now(settings)
            finally:
                _probing.release()

        threading.Thread(target=run, name="assistant-probe", daemon=True).start()
    return found or Probe(None, 0.0, key)


def forget() -> None:
    global _probe
    _probe = None


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def chatbot_health(config) -> tuple[dict, int]:
    """The health document and its HTTP status (200 for pass and warn, 503 for fail)."""
    now = _iso(time.time())
    checks: dict[str, list[dict]] = {}
    try:
        index = current_index()
    except Exception as error:  # reported as a failed check, never as its text
        log.warning("The assistant's index could not be built: %s", type(error).__name__)
        index = None
    checks["index:documents"] = [
        {
            "componentType": "component",
            "status": "pass" if index is not None and len(index) else "fail",
            "observedValue": len(index) if index is not None else 0,
            "observedUnit": "documents",
            "time": now,
        }
    ]
    dense = index is not None and index.embedder_name is not None
    checks["embedder:loaded"] = [
        {
            "componentType": "component",
            "status": "pass" if dense else "warn",
            "observedValue": embedder.NAME if dense else "unavailable: BM25 alone",
            "time": now,
        }
    ]
    configured = bool(config.get("AI_BASE_URL"))
    checks["answer:mode"] = [
        {
            "componentType": "component",
            "status": "pass" if configured else "warn",
            "observedValue": "provider" if configured else "retrieval only",
            "time": now,
        }
    ]
    if configured:
        probe = cached_probe(config)
        breaker_open = breaker_for(str(config["AI_BASE_URL"])).state == "open"
        if breaker_open:
            status, value = "warn", "unreachable (circuit open)"
        elif probe.reachable is None:
            status, value = "warn", "not probed yet"
        else:
            status = "pass" if probe.reachable else "warn"
            value = "reachable" if probe.reachable else "unreachable"
        checks["provider:reachability"] = [
            {
                "componentType": "system",
                "status": status,
                "observedValue": value,
                "time": _iso(probe.at) if probe.at else now,
            }
        ]
    statuses = [check[0]["status"] for check in checks.values()]
    status = "fail" if "fail" in statuses else "warn" if "warn" in statuses else "pass"
    body = {
        "status": status,
        "version": "1",
        "releaseId": index.release_id if index is not None else "",
        "serviceId": "svc-site-assistant",
        "description": "The site assistant: hybrid retrieval over tools, workflows and docs, "
        "answered by the configured text model or from retrieval alone.",
        "checks": checks,
    }
    return body, 503 if status == "fail" else 200
