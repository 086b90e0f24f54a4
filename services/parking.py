"""Waits that let go of what their caller holds: ``with parking.parked(): wait...``.

The web command's worker (web_worker.py) runs at most ``--threads`` requests in the app at
once per process. A request that waits for its queued run (``Prefer: wait``, up to 60 s)
holds nothing while it waits (no database connection, no Redis connection: services/queue/),
and it must not hold one of those places either, or 64 callers waiting for slow model runs
would leave every other request queued behind them. The web worker installs a hook that
frees the waiting request's place for another request while the wait lasts; elsewhere (the
embedded default's threads, the tests' client) ``parked`` does nothing.
"""

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

_hook: Callable[[], AbstractContextManager] = nullcontext


def install(hook: Callable[[], AbstractContextManager] | None) -> None:
    """Use ``hook()`` around every parked wait of this process (None: do nothing)."""
    global _hook
    _hook = nullcontext if hook is None else hook


def parked() -> AbstractContextManager:
    """A context for a wait during which the caller's place in the app may serve others."""
    return _hook()
