"""``seo.tags`` (engines/web/tags.py), run through its catalogue tools."""

import pytest

from engines import EngineError

# --- seo.tags ----------------------------------------------------------------------------


def test_social_tags_escape_content_and_fall_back_without_an_image(run):
    out = run("social-meta-tag-generator", title='Tom & Jerry "Live"', twitter_site="@toons")
    assert '<meta property="og:title" content="Tom &amp; Jerry &quot;Live&quot;">' in out["html"]
    assert {"attribute": "name", "key": "twitter:card", "content": "summary"} in out["tags"]
    assert {"attribute": "name", "key": "twitter:site", "content": "@toons"} in out["tags"]
    assert "summary_large_image needs an image; using summary." in out["warnings"]


def test_social_tags_refuse_a_relative_image(run):
    with pytest.raises(EngineError, match="image must be an absolute"):
        run("social-meta-tag-generator", title="T", image="/img/a.png")


def test_hreflang_generator_writes_sitemap_and_header_forms(run):
    alternates = "en https://e.com/\nde, https://e.com/de/"
    sitemap = run("hreflang-tag-generator", alternates=alternates, format="sitemap")
    assert sitemap["code"].splitlines()[1] == (
        '<xhtml:link rel="alternate" hreflang="de" href="https://e.com/de/"/>'
    )
    header = run("hreflang-tag-generator", alternates=alternates, format="http_header")
    assert header["code"] == (
        'Link: <https://e.com/>; rel="alternate"; hreflang="en", '
        '<https://e.com/de/>; rel="alternate"; hreflang="de"'
    )


@pytest.mark.parametrize(
    ("alternates", "message"),
    [
        ("en-UK https://e.com/uk/", "not an ISO 3166-1 country code"),
        ("en /en/", "must be an absolute URL"),
        ("just-one-word", "Line 1"),
    ],
)
def test_hreflang_generator_refuses_invalid_lines(run, alternates, message):
    with pytest.raises(EngineError, match=message):
        run("hreflang-tag-generator", alternates=alternates)
