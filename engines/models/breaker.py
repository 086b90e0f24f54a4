"""The circuit breaker per provider base URL: a failing provider is left alone for a while.

Every call to a base URL in this process goes through the one breaker ``breaker_for`` gives
(see ``CircuitBreaker``); an open breaker refuses calls at once, so that callers are answered
503 with a Retry-After instead of waiting on a provider that is down.
"""

from __future__ import annotations

import math
import threading
import time

BREAKER_THRESHOLD = 5
BREAKER_OPEN_SECONDS = 30.0

# Patched by tests: the breaker reads the clock through this.
_now = time.monotonic


class CircuitBreaker:
    """Stops calling a failing provider for a while instead of making every caller wait.

    Closed: calls pass and consecutive failures are counted; ``threshold`` of them open it.
    Open: calls are refused for ``open_seconds``. Then half-open: one probe passes; its
    success closes the breaker, its failure opens it again. Safe to share between threads.
    """

    def __init__(
        self, threshold: int = BREAKER_THRESHOLD, open_seconds: float = BREAKER_OPEN_SECONDS
    ) -> None:
        self.threshold = threshold
        self.open_seconds = open_seconds
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> str:
        with self._lock:
            if self._opened_at is None:
                return "closed"
            if _now() - self._opened_at < self.open_seconds:
                return "open"
            return "half-open"

    def allow(self) -> bool:
        """May a call go out now? In half-open state only the first caller gets True."""
        with self._lock:
            if self._opened_at is None:
                return True
            if _now() - self._opened_at < self.open_seconds or self._probing:
                return False
            self._probing = True
            return True

    def retry_after(self) -> int:
        """Seconds until the breaker lets a probe through (at least 1)."""
        with self._lock:
            if self._opened_at is None:
                return 1
            return max(1, math.ceil(self._opened_at + self.open_seconds - _now()))

    def succeeded(self) -> None:
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._probing = False

    def abandon(self) -> None:
        """The call ended without telling anything about the provider (a bug, an interrupt)."""
        with self._lock:
            self._probing = False

    def failed(self) -> None:
        with self._lock:
            self._failures += 1
            if self._probing or self._failures >= self.threshold:
                self._opened_at = _now()
            self._probing = False


_breakers: dict[str, CircuitBreaker] = {}
_breakers_lock = threading.Lock()


def breaker_for(base_url: str) -> CircuitBreaker:
    """The breaker shared by every call to ``base_url`` in this process."""
    key = base_url.rstrip("/")
    with _breakers_lock:
        breaker = _breakers.get(key)
        if breaker is None:
            breaker = _breakers[key] = CircuitBreaker()
        return breaker


def reset_breakers() -> None:
    """Forget every breaker's state (tests)."""
    with _breakers_lock:
        _breakers.clear()
