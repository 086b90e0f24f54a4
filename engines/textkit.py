"""Local text utilities for writing and SEO: counts, finders, cleaners, extractors, case rules."""

from __future__ import annotations

from engines.base import Engine

ENGINES: tuple[Engine, ...] = ()
