"""Public site pages (server-rendered)."""

from blueprints.site.routes import bp

__all__ = ["bp"]
