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
