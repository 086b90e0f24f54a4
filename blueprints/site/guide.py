"""``/docs/guide``: the user and API pages of ``docs/`` as one page, each under the anchor
of its title, so the site assistant's answers (and the pages' links to each other) point at
something that exists (services/assistant/documents.py reads the same pages)."""

from __future__ import annotations

from functools import lru_cache

from flask import render_template
from markupsafe import Markup

from blueprints.site.routes import bp
from services.assistant.documents import GUIDE_PATH, Section, guide_sections
from services.changelog import render_markdown


@lru_cache(maxsize=4)
def _rendered(sections: tuple[Section, ...]) -> tuple[tuple[Section, Markup], ...]:
    return tuple((section, render_markdown(section.body)) for section in sections)


@bp.get(GUIDE_PATH)
def guide():
    """The guide: using the site, the API, webhooks, workflows, the plan endpoints."""
    return render_template("site/guide.html", sections=_rendered(guide_sections()))
