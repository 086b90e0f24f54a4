"""The API changelog: ``/api/changelog/`` (an article per entry, anchored by its id) and
its Atom 1.0 feed ``/api/changelog/feed.atom``, both from ``docs/changelog.yaml``
(``services/changelog.py``)."""

from xml.etree import ElementTree as ET

from flask import Response, render_template, request
from markupsafe import escape

from blueprints.site.routes import bp
from services import changelog, urls
from services.changelog import FEED_PATH, KINDS, MIN_SUNSET_MONTHS, PAGE_PATH, midnight_utc

ATOM = "http://www.w3.org/2005/Atom"
ATOM_TYPE = "application/atom+xml"
ET.register_namespace("", ATOM)  # Atom as the default namespace: <feed xmlns="...">


@bp.get(PAGE_PATH)
def changelog_page():
    """Every change to the API, newest first, and the deprecation and versioning policy."""
    log = changelog.current()
    return render_template(
        "site/changelog.html",
        entries=log.entries,
        kinds=KINDS,
        min_sunset_months=MIN_SUNSET_MONTHS,
        feed_path=FEED_PATH,
    )


@bp.get(FEED_PATH)
def changelog_feed():
    """The changelog as an Atom 1.0 feed: one entry per changelog entry."""
    response = Response(atom_feed(changelog.current(), urls.base_url()), mimetype=ATOM_TYPE)
    response.add_etag()
    return response.make_conditional(request)


def _rfc3339(day) -> str:
    return midnight_utc(day).strftime("%Y-%m-%dT%H:%M:%SZ")


def atom_feed(log: changelog.Changelog, base: str) -> bytes:
    """The feed document; ids are the absolute URLs of the page and of each entry's anchor."""
    page = base + PAGE_PATH
    feed = ET.Element(f"{{{ATOM}}}feed")

    def child(parent, name: str, text: str | None = None, **attributes) -> ET.Element:
        element = ET.SubElement(parent, f"{{{ATOM}}}{name}", attributes)
        if text is not None:
            element.text = text
        return element

    child(feed, "id", page)
    child(feed, "title", "SVC API changelog")
    child(feed, "subtitle", "Additions, changes, deprecations and fixes of the v1 API.")
    child(feed, "updated", _rfc3339(log.updated) if log.updated else "1970-01-01T00:00:00Z")
    child(feed, "link", rel="self", type=ATOM_TYPE, href=base + FEED_PATH)
    child(feed, "link", rel="alternate", type="text/html", href=page)
    author = child(feed, "author")
    child(author, "name", "SVC")
    for entry in log.entries:
        item = child(feed, "entry")
        child(item, "id", base + entry.url_path)
        child(item, "title", f"{entry.kind.capitalize()}: {entry.title}")
        child(item, "link", rel="alternate", type="text/html", href=base + entry.url_path)
        child(item, "published", _rfc3339(entry.date))
        child(item, "updated", _rfc3339(entry.date))
        child(item, "category", term=entry.kind)
        # ElementTree escapes the HTML as text: type="html" content is escaped markup.
        child(item, "content", _entry_html(entry), type="html")
    return ET.tostring(feed, encoding="utf-8", xml_declaration=True)


def _entry_html(entry: changelog.Entry) -> str:
    parts = []
    if entry.endpoints:
        codes = ", ".join(f"<code>{escape(endpoint)}</code>" for endpoint in entry.endpoints)
        parts.append(f"<p>Endpoints: {codes}</p>")
    if entry.kind == "deprecated":
        parts.append(
            f"<p>Sunset: {entry.sunset.isoformat()}. Use "
            f"<code>{escape(entry.replacement)}</code> instead.</p>"
        )
    parts.append(str(entry.html))
    return "\n".join(parts)
