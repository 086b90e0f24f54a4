"""Image generation through the configured provider's images endpoint."""

from __future__ import annotations

from engines.base import Engine

ENGINES: tuple[Engine, ...] = ()
