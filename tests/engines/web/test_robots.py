"""``seo.robots`` (engines/web/robots.py), run through its catalogue tools."""

import pytest

from engines import EngineError

# --- seo.robots --------------------------------------------------------------------------

ROBOTS = """User-agent: *
Disallow: /private
Allow: /private/open
Disallow: /*.pdf$

User-agent: bingbot
User-agent: Slurp
Disallow: /
"""


@pytest.mark.parametrize(
    ("agent", "path", "allowed"),
    [
        ("Googlebot", "/private/secret", False),
        ("Googlebot", "/private/open/page", True),
        ("Googlebot", "/files/report.pdf", False),
        ("Googlebot", "/files/report.pdf?x=1", True),
        ("Googlebot", "/public", True),
        ("Mozilla/5.0 (compatible; bingbot/2.0)", "/anything", True),
        ("bingbot/2.0", "/anything", False),
        ("Slurp", "/robots.txt", True),
    ],
)
def test_robots_tester_follows_rfc_9309(run, agent, path, allowed):
    out = run("robots-txt-tester", robots=ROBOTS, urls=path, user_agent=agent)
    assert out["results"][0]["allowed"] is allowed


def test_robots_tester_reports_problems_and_needs_urls(run):
    out = run("robots-txt-tester", robots="Disallow: /x\nNoindex: /y\nbad line", urls="/x")
    assert out["group"] is None and out["results"][0]["allowed"] is True
    assert out["problems"] == [
        "Line 1: Disallow comes before any User-agent line.",
        'Line 2: "Noindex" is not a robots.txt directive.',
        'Line 3: "bad line" is not "directive: value".',
    ]
    with pytest.raises(EngineError, match="List the URLs"):
        run("robots-txt-tester", robots=ROBOTS)


def test_robots_generator_for_staging_blocks_everything(run):
    out = run("robots-txt-generator", disallow="/ignored", block_everything=True)
    assert out["robots_txt"] == "User-agent: *\nDisallow: /\n"


def test_robots_generator_with_nothing_blocked_allows_all(run):
    out = run("robots-txt-generator", disallow="", sitemaps="https://e.com/sitemap.xml")
    assert out["robots_txt"] == "User-agent: *\nDisallow:\n\nSitemap: https://e.com/sitemap.xml\n"
