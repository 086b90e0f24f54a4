"""``seo.sitemap`` (engines/web/sitemaps.py), run through its catalogue tools."""

import pytest

from engines import EngineError

# --- seo.sitemap -------------------------------------------------------------------------


def test_sitemap_generator_output_passes_the_validator(run):
    urls = "https://e.com/\nhttps://e.com/a?x=1&y=2 2024-02-29 0.5"
    generated = run("xml-sitemap-generator", urls=urls, changefreq="weekly")
    assert "<loc>https://e.com/a?x=1&amp;y=2</loc>" in generated["xml"]
    checked = run("xml-sitemap-validator", xml=generated["xml"])
    assert (checked["valid"], checked["entries"], checked["issues"]) == (True, 2, [])


def test_sitemap_generator_says_which_line_it_skipped_and_why_once(run):
    urls = (
        "https://e.com/\n"
        "not a url\n"
        "\n"
        "https://e.com/a 2024-13-01\n"
        f"https://e.com/{'x' * 2040}\n"
        "https://e.com/"
    )
    out = run("xml-sitemap-generator", urls=urls)
    assert out["skipped"] == [
        {
            "line": 2,
            "reason": 'Line 2: "not a url" does not start with an absolute http(s) URL; skipped.',
        },
        {
            "line": 4,
            "reason": 'Line 4: "2024-13-01" is not a date, change frequency or priority; skipped.',
        },
        {"line": 5, "reason": "Line 5: its URL is longer than 2,048 characters; skipped."},
        {
            "line": 6,
            "reason": "Line 6: https://e.com/ is listed twice (first on line 1); skipped.",
        },
    ]


def test_sitemap_generator_refuses_a_list_without_valid_urls(run):
    with pytest.raises(EngineError, match="No valid URL"):
        run("xml-sitemap-generator", urls="/a\n/b")


def test_sitemap_validator_reads_a_sitemap_index(run):
    xml = (
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<sitemap><loc>https://e.com/s1.xml</loc></sitemap></sitemapindex>"
    )
    out = run("xml-sitemap-validator", xml=xml)
    assert (out["type"], out["entries"], out["valid"]) == ("sitemapindex", 1, True)


@pytest.mark.parametrize(
    ("xml", "message"),
    [
        ("<urlset><url>", "not well-formed XML"),
        ("<feed/>", "root element is <feed>"),
        ('<!DOCTYPE x [<!ENTITY a "b">]><urlset/>', "DOCTYPE"),
    ],
)
def test_sitemap_validator_refuses_what_is_not_a_sitemap(run, xml, message):
    with pytest.raises(EngineError, match=message):
        run("xml-sitemap-validator", xml=xml)
