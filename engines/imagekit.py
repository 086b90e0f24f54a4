"""Local image tools beyond images.process: effects, overlays, palettes, metadata, comparisons."""

from __future__ import annotations

from engines.base import Engine

ENGINES: tuple[Engine, ...] = ()
