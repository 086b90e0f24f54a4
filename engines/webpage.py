"""Local SEO on pages and links: HTML audits, structured data, sitemaps, robots rules, tags."""

from __future__ import annotations

from engines.base import Engine

ENGINES: tuple[Engine, ...] = ()
