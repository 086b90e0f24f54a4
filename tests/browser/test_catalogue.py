"""/tools/ as a visitor uses it (live search, filters) and the API changelog with its feed."""

import re
import xml.etree.ElementTree as ET
from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import expect

ATOM = "{http://www.w3.org/2005/Atom}"


def _count(page) -> int:
    """The number the results' live region announces ("462 tools", "5 tools matching …")."""
    text = page.locator("#tool-count").inner_text()
    found = re.match(r"(\d+) tools?\b", text)
    assert found, f"no count in the live region: {text!r}"
    return int(found.group(1))


def _query(page) -> dict:
    return parse_qs(urlsplit(page.url).query)


def test_search_narrows_the_list_as_you_type_and_the_address_follows(visitor):
    page = visitor.page
    visitor.goto("/tools/")
    total = _count(page)
    assert total > 400
    assert page.locator("#tool-results .tool-list > li").count() == total
    loads = []
    page.on("load", lambda _: loads.append(page.url))

    # Typed key by key, no Enter: htmx asks once the typing pauses (200 ms).
    page.locator("#tool-q").press_sequentially("word", delay=40)
    expect(page.locator("#tool-count")).to_contain_text("matching “word”")
    word = _count(page)
    assert 0 < word < total
    assert _query(page) == {"q": ["word"]}  # empty filters left out of the address

    page.locator("#tool-q").press_sequentially(" freq", delay=40)
    expect(page.locator("#tool-count")).to_contain_text("matching “word freq”")
    narrower = _count(page)
    assert 0 < narrower < word
    assert _query(page) == {"q": ["word freq"]}
    cards = page.locator("#tool-results .tool-list > li")
    assert cards.count() == narrower
    expect(page.locator("#tool-results")).to_contain_text("Word Frequency Counter")
    assert page.locator("#tool-count").get_attribute("aria-live") == "polite"
    assert loads == [], "the results came by a full page load, not into the page"


def test_category_filter_narrows_the_list(visitor):
    page = visitor.page
    visitor.goto("/tools/")
    total = _count(page)

    page.select_option("#tool-category", "image-editing")
    expect(page.locator("#tool-count")).to_contain_text("in Image editing")
    shown = _count(page)
    assert 0 < shown < total
    assert _query(page) == {"category": ["image-editing"]}
    groups = page.locator("#tool-results section.tool-group")
    assert groups.count() == 1
    assert groups.first.locator("h2").inner_text().startswith("Image editing")
    assert page.locator("#tool-results .tool-list > li").count() == shown

    # With a search on top, the two narrow together; the address keeps both.
    page.locator("#tool-q").press_sequentially("resize", delay=30)
    expect(page.locator("#tool-count")).to_contain_text("matching “resize” in Image editing")
    assert 0 < _count(page) <= shown
    assert _query(page) == {"q": ["resize"], "category": ["image-editing"]}
    expect(page.locator("#tool-results")).to_contain_text("Image Resizer")


def test_changelog_page_and_its_atom_feed_render(visitor):
    page = visitor.page
    visitor.goto("/api/changelog/")
    expect(page.locator("h1")).to_have_text("API changelog")
    entries = page.locator("article.changelog-entry")
    assert entries.count() >= 1
    first = entries.first
    assert first.locator("time").get_attribute("datetime")
    assert first.locator("h2 a").get_attribute("href") == "#" + first.get_attribute("id")
    feed_link = page.locator(".changelog-links a[type='application/atom+xml']")
    feed_path = feed_link.get_attribute("href")
    assert feed_path.endswith("feed.atom")

    feed = page.request.get(feed_link.evaluate("a => a.href"))
    assert feed.ok
    assert feed.headers["content-type"].startswith("application/atom+xml")
    root = ET.fromstring(feed.body())
    assert root.tag == f"{ATOM}feed"
    assert root.findtext(f"{ATOM}title")
    assert root.findtext(f"{ATOM}updated")
    feed_entries = root.findall(f"{ATOM}entry")
    for entry in feed_entries:
        for child in ("id", "title", "updated", "content"):
            assert entry.findtext(f"{ATOM}{child}"), f"an entry without <{child}>"
    # The feed has the page's entries, each linking to its anchor on the page.
    anchors = [entry.findtext(f"{ATOM}id").rsplit("#", 1)[-1] for entry in feed_entries]
    assert anchors == entries.evaluate_all("articles => articles.map(a => a.id)")
    title = root.find(f"{ATOM}entry/{ATOM}title").text
    assert title.endswith(first.locator("h2").inner_text().strip())
    # Browsers find the feed from any page of the site.
    visitor.goto("/")
    assert page.locator("link[rel=alternate][type='application/atom+xml']").count() == 1
