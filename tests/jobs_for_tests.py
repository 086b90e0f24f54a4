"""Job functions that only tests enqueue (worker processes import them by name)."""

import time


def spin(seconds: float) -> None:
    """Keep a core busy for ``seconds``: a compute job standing for OCR or a local model."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sum(range(10_000))
