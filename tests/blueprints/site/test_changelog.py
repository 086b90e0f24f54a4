"""The API changelog: the real docs/changelog.yaml is valid and true to the app's routes, and
/api/changelog/ and its Atom feed render a changelog file the tests write."""

import re
import textwrap
from xml.etree import ElementTree as ET

import pytest
from flask_smorest.spec.plugins import FlaskPlugin

from app import create_app
from services import changelog
from services.changelog import DEFAULT_PATH, KINDS, ChangelogError
from tests.helpers import app_config

ATOM = "{http://www.w3.org/2005/Atom}"
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$")
ENTRIES = """\
- date: 2026-11-21
  title: The first endpoints
  kind: added
  endpoints: ["GET /v1/public/whoami", "GET /v1/tools/{slug}"]
  body: |
    **Keys** and whoami. Fish & chips <script>alert(1)</script>
    <span style="color: red" onclick="x()">styled</span>
- date: 2026-12-01
  title: NaN is refused
  kind: fixed
  endpoints: []
  body: "`NaN` is a 400 `invalid_json`: see [the problems](/docs/problems/)."
- id: whoami-moves
  date: 2026-11-30
  title: Whoami moves
  kind: deprecated
  endpoints: ["GET /v1/public/whoami"]
  sunset: 2027-06-01
  replacement: "GET /v1/tools"
  body: Use the other one.
"""
IDS_NEWEST_FIRST = ["2026-12-01-nan-is-refused", "whoami-moves", "2026-11-21-the-first-endpoints"]


@pytest.fixture
def app_settings(tmp_path):
    """``app`` (and so ``client``) on a changelog of three entries."""
    path = tmp_path / "changelog.yaml"
    path.write_text(ENTRIES, encoding="utf-8")
    return {"CHANGELOG_PATH": str(path)}


def app_endpoints(app) -> set[str]:
    """Every ``METHOD /path/{var}`` the app answers, named as the changelog names them."""
    return {
        f"{method} {FlaskPlugin.flaskpath2openapi(rule.rule)}"
        for rule in app.url_map.iter_rules()
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }


# --- the real changelog ------------------------------------------------------------------


def test_the_real_changelog_is_valid_and_names_real_routes(app):
    log = changelog.load(DEFAULT_PATH)
    assert 12 <= len(log.entries) <= 60
    dates = [entry.date for entry in log.entries]
    assert dates == sorted(dates, reverse=True)
    assert len({entry.id for entry in log.entries}) == len(log.entries)
    assert {entry.kind for entry in log.entries} <= set(KINDS)
    routes = app_endpoints(app)
    for entry in log.entries:
        assert entry.body.strip() and entry.title
        unknown = set(entry.endpoints) - routes
        assert not unknown, f"{entry.id} names endpoints the app does not have: {unknown}"
        if entry.replacement:
            assert entry.replacement in routes
    for endpoint in log.deprecations:
        assert endpoint in routes


def test_the_default_app_renders_the_real_changelog(_schema):
    app = create_app(app_config())
    client = app.test_client()
    page = client.get("/api/changelog/").get_data(as_text=True)
    feed = ET.fromstring(client.get("/api/changelog/feed.atom").data)
    log = changelog.load(DEFAULT_PATH)
    for entry in log.entries:
        assert f'<article id="{entry.id}"' in page
    assert len(feed.findall(f"{ATOM}entry")) == len(log.entries)


# --- the page ----------------------------------------------------------------------------


def test_the_page_shows_every_entry_newest_first_with_its_anchor(client):
    response = client.get("/api/changelog/")
    assert response.status_code == 200 and response.mimetype == "text/html"
    page = response.get_data(as_text=True)
    found = re.findall(r'<article id="([^"]+)" class="changelog-entry">', page)
    assert found == IDS_NEWEST_FIRST
    for anchor in IDS_NEWEST_FIRST:
        assert f'<a href="#{anchor}">' in page  # the entry's self link
    assert '<time datetime="2026-11-21">21 November 2026</time>' in page
    assert '<span class="badge kind-deprecated">deprecated</span>' in page
    assert '<span class="badge kind-fixed">fixed</span>' in page
    assert "<code>GET /v1/tools/{slug}</code>" in page
    assert '<time datetime="2027-06-01">1 June 2027</time>' in page  # the sunset
    assert "Use <code>GET /v1/tools</code> instead" in page
    assert 'id="policy"' in page and "at least 6 months" in page


def test_entry_bodies_are_markdown_made_safe(client):
    page = client.get("/api/changelog/").get_data(as_text=True)
    assert "<strong>Keys</strong> and whoami. Fish &amp; chips" in page
    assert '<a href="/docs/problems/" rel="noopener noreferrer">the problems</a>' in page
    assert "<code>invalid_json</code>" in page
    assert "alert(1)" not in page and "onclick" not in page and "color: red" not in page


def test_the_page_obeys_the_sites_content_security_policy(client):
    response = client.get("/api/changelog/")
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    page = response.get_data(as_text=True)
    assert not re.search(r"<script(?![^>]*\bsrc=)", page)  # no inline script
    assert "<style" not in page and "style=" not in page
    assert client.get("/api/changelog").status_code == 308  # to the canonical address


# --- the feed ----------------------------------------------------------------------------


def test_the_feed_is_atom_with_an_entry_per_change(client):
    response = client.get("/api/changelog/feed.atom")
    assert response.status_code == 200
    assert response.mimetype == "application/atom+xml"
    feed = ET.fromstring(response.data)
    assert feed.tag == f"{ATOM}feed"
    assert feed.findtext(f"{ATOM}id") == "https://svc.test/api/changelog/"
    assert feed.findtext(f"{ATOM}title") and feed.find(f"{ATOM}author/{ATOM}name") is not None
    assert feed.findtext(f"{ATOM}updated") == "2026-12-01T00:00:00Z"
    links = {link.get("rel"): link.get("href") for link in feed.findall(f"{ATOM}link")}
    assert links == {
        "self": "https://svc.test/api/changelog/feed.atom",
        "alternate": "https://svc.test/api/changelog/",
    }
    entries = feed.findall(f"{ATOM}entry")
    assert len(entries) == 3
    for entry, anchor in zip(entries, IDS_NEWEST_FIRST, strict=True):
        url = f"https://svc.test/api/changelog/#{anchor}"
        assert entry.findtext(f"{ATOM}id") == url
        (link,) = entry.findall(f"{ATOM}link")
        assert (link.get("rel"), link.get("href")) == ("alternate", url)
        assert RFC3339.match(entry.findtext(f"{ATOM}updated"))
        assert entry.findtext(f"{ATOM}title")
        content = entry.find(f"{ATOM}content")
        assert content.get("type") == "html"
    first = entries[-1].find(f"{ATOM}content").text  # the HTML, unescaped by the parser
    assert "<strong>Keys</strong>" in first and "<code>GET /v1/tools/{slug}</code>" in first
    assert "<script" not in first
    deprecated = entries[1].find(f"{ATOM}content").text
    assert "Sunset: 2027-06-01" in deprecated and "<code>GET /v1/tools</code>" in deprecated


def test_the_feed_escapes_its_html_and_answers_conditional_requests(client):
    response = client.get("/api/changelog/feed.atom")
    raw = response.get_data(as_text=True)
    assert "&lt;strong&gt;Keys&lt;/strong&gt;" in raw and "<strong>" not in raw
    assert "Fish &amp;amp; chips" in raw  # the HTML's &amp;, escaped once more as XML
    again = client.get(
        "/api/changelog/feed.atom", headers={"If-None-Match": response.headers["ETag"]}
    )
    assert again.status_code == 304


def test_the_public_base_url_names_the_feed_links(app, client):
    app.config["PUBLIC_BASE_URL"] = "https://api.example.com"
    feed = ET.fromstring(client.get("/api/changelog/feed.atom").data)
    assert feed.findtext(f"{ATOM}id") == "https://api.example.com/api/changelog/"


# --- the loader --------------------------------------------------------------------------


def entry(**fields) -> dict:
    return {"date": "2026-11-21", "title": "A change", "kind": "added", "body": "Text.", **fields}


def test_an_unknown_kind_is_refused():
    with pytest.raises(ChangelogError, match=r"entry 1 \('A change'\): `kind` is 'improved'"):
        changelog.parse([entry(kind="improved")], source="docs/changelog.yaml")


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"date": "21 November 2026"}, "`date` must be a date as YYYY-MM-DD"),
        ({"date": "2026-02-30"}, "`date` must be a date as YYYY-MM-DD"),
        ({"title": ""}, "`title` must be a non-empty string"),
        ({"body": " "}, "`body` must be non-empty Markdown"),
        ({"endpoints": "GET /v1/tools"}, "`endpoints` must be a list"),
        ({"endpoints": ["get /v1/tools"]}, "is not '<METHOD> <path>'"),
        ({"endpoints": ["GET /v1/tools", "GET /v1/tools"]}, "names an endpoint twice"),
        ({"id": "Not An Anchor"}, "must be lower-case letters"),
        ({"summary": "x"}, "unknown field(s) summary"),
    ],
)
def test_a_malformed_entry_is_refused(fields, message):
    with pytest.raises(ChangelogError, match=re.escape(message)):
        changelog.parse([entry(**fields)])


def test_ids_are_unique_and_derived_from_date_and_title():
    log = changelog.parse([entry(title="Whoami: new fields!"), entry(id="explicit-one")])
    assert [e.id for e in log.entries] == ["explicit-one", "2026-11-21-whoami-new-fields"]
    with pytest.raises(ChangelogError, match="has the id"):
        changelog.parse([entry(), entry()])


def test_a_file_that_is_not_a_list_is_refused(tmp_path):
    path = tmp_path / "changelog.yaml"
    path.write_text(textwrap.dedent("entries:\n  - title: x\n"), encoding="utf-8")
    with pytest.raises(ChangelogError, match="must be a list of entries"):
        changelog.load(path)
