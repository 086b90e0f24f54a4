"""This service's public address, and the absolute URLs built on it.

Every absolute URL the product hands out (a link in a mail, a run's ``status_url``, a file's
URL, an ``upgrade_url``, a problem's ``type``, a code snippet on a page) is the configured
``PUBLIC_BASE_URL`` followed by a path, never the request's ``Host`` or ``X-Forwarded-Host``:
a client chooses those, and a forged one would otherwise choose where a mailed password-reset
link points (the token then goes to the attacker's host).

``PUBLIC_BASE_URL`` is required outside development and tests; there, unset, it is the local
server's address (see ``configure``). Outside development, requests whose ``Host`` is not the
deployment's (``PUBLIC_BASE_URL``'s host, the hosts named in ``TRUSTED_HOSTS``, or the
machine's own loopback names) are refused with 400 before any view runs (Flask's
``TRUSTED_HOSTS``).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any
from urllib.parse import urlsplit

from flask import current_app, has_request_context, url_for

# Where the machine's own probes and health checks come from: never a client's choice of
# link, since no link is built from the request.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")


def base_url() -> str:
    """``PUBLIC_BASE_URL`` without its final slash, e.g. ``https://svc.example.com``."""
    return current_app.config["PUBLIC_BASE_URL"].rstrip("/")


def absolute_url_for(endpoint: str, **values: Any) -> str:
    """``url_for(endpoint, **values)`` as an absolute URL on ``PUBLIC_BASE_URL``, in a
    request or outside one (a job, a command)."""
    if has_request_context():
        return base_url() + url_for(endpoint, **values)
    app = current_app._get_current_object()
    return base_url() + app.url_map.bind("localhost").build(endpoint, values)


def absolute(path: str) -> str:
    """``path`` (starting with ``/``) as an absolute URL on ``PUBLIC_BASE_URL``."""
    return base_url() + path


def configure(config: MutableMapping[str, Any]) -> None:
    """Check ``PUBLIC_BASE_URL`` (or give it its local default) and set ``TRUSTED_HOSTS``.

    Raises RuntimeError, naming the setting, when it is missing outside development and tests
    or is not an ``http(s)://host[:port]`` address.
    """
    local = config["ENV_NAME"] in ("development", "test")
    base = (config.get("PUBLIC_BASE_URL") or "").strip()
    if not base:
        if not local:
            raise RuntimeError(
                "PUBLIC_BASE_URL is not set. Outside development it is required: every link "
                "the service mails or answers is built on it, never on the request's Host "
                "header. Set it to the address clients use, e.g. "
                "PUBLIC_BASE_URL=https://svc.example.com."
            )
        base = _local_default(config)
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise RuntimeError(
            f"PUBLIC_BASE_URL must be an http(s) address such as https://svc.example.com, "
            f"not {base!r}."
        )
    config["PUBLIC_BASE_URL"] = base.rstrip("/")
    extra = config.get("TRUSTED_HOSTS")
    if isinstance(extra, str):
        extra = [host.strip() for host in extra.split(",") if host.strip()]
    if extra or not local:
        config["TRUSTED_HOSTS"] = list(
            dict.fromkeys([parts.hostname, *(extra or ()), *LOOPBACK_HOSTS])
        )


def _local_default(config: MutableMapping[str, Any]) -> str:
    """Development and tests: ``SERVER_NAME`` where one is set, else the local server."""
    if config.get("SERVER_NAME"):
        return f"{config.get('PREFERRED_URL_SCHEME') or 'http'}://{config['SERVER_NAME']}"
    return "http://localhost:5000" if config["ENV_NAME"] == "development" else "http://localhost"
