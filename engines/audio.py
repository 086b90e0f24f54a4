"""Local audio and video editing with ffmpeg: trims, conversions, loudness, speed, frames."""

from __future__ import annotations

from engines.base import Engine

ENGINES: tuple[Engine, ...] = ()
