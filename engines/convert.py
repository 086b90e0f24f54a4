"""Data and code converters (local): formats, encodings, hashes, dates, colours, units."""

from __future__ import annotations

from engines.base import Engine

ENGINES: tuple[Engine, ...] = ()
