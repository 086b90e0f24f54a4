"""Local SEO on pages, links and text: the ``seo.*`` engines, one module per family of jobs.

Nothing here fetches anything: every engine works on the HTML, URLs or text it is given, and
the page audits, tags, URLs, robots rules, sitemaps, redirects and structured data choose their
operation from the tool's ``params``. Shared helpers live in ``_helpers`` (issues, URLs),
``page`` (HTML parsing) and ``hreflang`` (language and region codes).
"""

from engines.base import Engine
from engines.web.density import DensityEngine
from engines.web.headings import HeadingsEngine
from engines.web.html_audit import HtmlAuditEngine
from engines.web.jsonld import JsonLdEngine
from engines.web.keywords import KeywordsEngine
from engines.web.redirects import RedirectsEngine
from engines.web.robots import RobotsEngine
from engines.web.serp import SerpSnippetEngine
from engines.web.sitemaps import SitemapEngine
from engines.web.slug import SlugEngine
from engines.web.tags import TagsEngine
from engines.web.urls import UrlEngine

ENGINES: tuple[Engine, ...] = (
    HtmlAuditEngine(),
    JsonLdEngine(),
    RedirectsEngine(),
    RobotsEngine(),
    SitemapEngine(),
    TagsEngine(),
    UrlEngine(),
    KeywordsEngine(),
    SerpSnippetEngine(),
    SlugEngine(),
    DensityEngine(),
    HeadingsEngine(),
)
