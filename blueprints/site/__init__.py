"""Public site pages (server-rendered)."""

from blueprints.site.routes import bp
from blueprints.site import changelog  # noqa: E402,F401  (its views, on bp)

__all__ = ["bp"]
