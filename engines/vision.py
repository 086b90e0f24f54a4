"""Image understanding through a vision-capable chat model (provider only)."""

from __future__ import annotations

from engines.base import Engine

ENGINES: tuple[Engine, ...] = ()
