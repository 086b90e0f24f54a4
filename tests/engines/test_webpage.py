"""The local SEO engines of engines.webpage, run through their catalogue tools."""

import json

import pytest

from engines import EngineError

PAGE = (
    '<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
    '<meta name="description" content="{description}">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    '<link rel="canonical" href="https://example.com/a">'
    '<meta property="og:title" content="A"><meta property="og:description" content="B">'
    '<meta property="og:image" content="https://example.com/i.png">'
    '<meta property="og:url" content="https://example.com/a">'
    '<meta name="twitter:card" content="summary"></head><body><h1>A</h1></body></html>'
)
GOOD_TITLE = "Trail Running Shoes for Rocky Terrain | Summit"
GOOD_DESCRIPTION = "Grippy, light trail running shoes tested on granite, scree and mud by our team."


# --- seo.html_audit ----------------------------------------------------------------------


def test_meta_audit_of_a_complete_page_scores_100(run):
    out = run("meta-tag-auditor", html=PAGE.format(title=GOOD_TITLE, description=GOOD_DESCRIPTION))
    assert out["issues"] == []
    assert out["score"] == 100
    assert out["title"] == {"text": GOOD_TITLE, "characters": 46, "pixel_width": 424}


def test_meta_audit_of_a_bare_page_lists_errors_first_class(run):
    out = run("meta-tag-auditor", html="<p>hello</p>")
    errors = {i["field"] for i in out["issues"] if i["severity"] == "error"}
    assert errors == {"title", "description", "viewport"}
    assert out["title"]["text"] is None and out["canonical"] is None


def test_meta_audit_reads_noindex_and_duplicate_canonicals(run):
    html = (
        '<meta name="robots" content="noindex, nofollow">'
        '<link rel="canonical" href="/a"><link rel="canonical" href="/b">'
    )
    issues = {(i["field"], i["severity"]) for i in run("meta-tag-auditor", html=html)["issues"]}
    assert {("robots", "warning"), ("robots", "notice"), ("canonical", "error")} <= issues


def test_link_extractor_classifies_links_against_the_page_url(run):
    html = (
        '<base href="https://shop.example/"><a href="p/1">One</a>'
        '<a href="https://www.shop.example/p/2" rel="UGC">Two</a>'
        '<a href="https://other.example/" rel="nofollow sponsored" target="_blank">Deal</a>'
        '<a href="#top">Top</a><a href="tel:+15550100">Call</a>'
        '<a href="javascript:run()">Run demo</a>'
        "<a>no href</a>"
    )
    out = run("link-extractor", html=html, page_url="https://shop.example/index.html")
    assert [(link["type"], link["url"]) for link in out["links"]] == [
        ("internal", "https://shop.example/p/1"),
        ("internal", "https://www.shop.example/p/2"),
        ("external", "https://other.example/"),
        ("fragment", "https://shop.example/#top"),
        ("tel", None),
        ("javascript", None),
    ]
    assert out["links"][2]["rel"] == ["nofollow", "sponsored"]
    assert out["counts"]["ugc"] == 1 and out["counts"]["javascript"] == 1
    assert [i["message"] for i in out["issues"]] == ["javascript: links cannot be crawled."]


def test_link_extractor_uses_a_linked_images_alt_as_its_text(run):
    out = run("link-extractor", html='<a href="/"><img src="l.png" alt="Home"></a>')
    assert out["links"][0]["text"] == "Home" and out["counts"]["empty_anchor"] == 0


def test_link_extractor_refuses_a_relative_page_url(run):
    with pytest.raises(EngineError, match="page_url must be an absolute"):
        run("link-extractor", html="<a href='/'>x</a>", page_url="/blog/")


@pytest.mark.parametrize(
    ("img", "problem"),
    [
        ('<img src="a.jpg" alt="A red kayak on a lake">', None),
        ('<img src="a.jpg">', "missing"),
        ('<img src="a.jpg" alt="">', "empty"),
        ('<img src="a.jpg" alt="" aria-hidden="true">', None),
        ('<img src="a.jpg" alt="DSC_0042">', "filename"),
        ('<img src="a.jpg" alt="photo">', "generic"),
        ('<img src="a.jpg" alt="A picture of a kayak">', "redundant_prefix"),
        (f'<img src="a.jpg" alt="{"word " * 30}">', "too_long"),
        ('<a href="/"><img src="a.jpg" alt=""></a>', "empty_in_link"),
    ],
)
def test_image_alt_audit(run, img, problem):
    out = run("image-alt-text-auditor", html=img)
    assert out["images"][0]["problem"] == problem
    assert out["with_problems"] == (problem is not None)


def test_hreflang_validator_accepts_a_complete_set(run):
    html = (
        '<link rel="alternate" hreflang="en" href="https://e.com/">'
        '<link rel="alternate" hreflang="zh-Hant-TW" href="https://e.com/tw/">'
        '<link rel="alternate" hreflang="x-default" href="https://e.com/">'
    )
    out = run("hreflang-validator", html=html, page_url="https://e.com/")
    assert out["valid"] is True and out["issues"] == []


def test_hreflang_validator_catches_conflicts_and_a_missing_self_reference(run):
    html = (
        '<link rel="alternate" hreflang="fr" href="https://e.com/fr/">'
        '<link rel="alternate" hreflang="FR" href="https://e.com/fr-2/">'
        '<link rel="alternate" hreflang="english" href="https://e.com/en/">'
    )
    out = run("hreflang-validator", html=html, page_url="https://e.com/de/")
    messages = [i["message"] for i in out["issues"] if i["severity"] == "error"]
    assert messages == [
        "FR points to two URLs.",
        '"english" is not language[-Script][-REGION], such as en, en-GB or zh-Hant-TW.',
        "The page does not list itself among its alternates.",
    ]


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


# --- seo.url -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "options", "expected"),
    [
        ("Example.COM", {}, "https://example.com/"),
        ("https://example.com:443/a/../b/./c?", {}, "https://example.com/b/c"),
        ("http://example.com:8080/x", {"force_https": False}, "http://example.com:8080/x"),
        ("https://example.com/%7euser/%2f", {}, "https://example.com/~user/%2F"),
        (
            "https://www.example.com/p",
            {"www": "remove", "trailing_slash": "add"},
            "https://example.com/p/",
        ),
        ("https://example.com/a/index.html", {"remove_index": True}, "https://example.com/a/"),
        ("https://example.com/?b=1&a=2&fbclid=x#top", {}, "https://example.com/?a=2&b=1"),
        ("https://bücher.example/", {}, "https://xn--bcher-kva.example/"),
    ],
)
def test_canonical_url_normalizer(run, url, options, expected):
    assert run("canonical-url-normalizer", url=url, **options)["url"] == expected


def test_canonical_url_normalizer_can_keep_everything(run):
    url = "https://example.com/a?utm_source=x&b=1#frag"
    out = run(
        "canonical-url-normalizer",
        url=url,
        strip_tracking=False,
        sort_query=False,
        remove_fragment=False,
    )
    assert out == {"url": url, "changed": False, "removed_parameters": []}


def test_utm_builder_requires_source_medium_and_campaign(run):
    with pytest.raises(EngineError, match="utm_medium, utm_campaign"):
        run("utm-link-builder", url="https://e.com/", source="x")


def test_utm_builder_keeps_case_when_asked(run):
    out = run(
        "utm-link-builder", url="https://e.com/", source="LinkedIn", medium="social",
        campaign="Q3", lowercase=False,
    )  # fmt: skip
    assert out["url"] == "https://e.com/?utm_source=LinkedIn&utm_medium=social&utm_campaign=Q3"
    assert out["warnings"] == []


def test_utm_parser_of_a_clean_url_reports_missing_fields(run):
    out = run("utm-link-parser", url="https://e.com/a?x=1")
    assert out["utm"]["source"] is None
    assert out["issues"] == [
        "utm_source is missing.",
        "utm_medium is missing.",
        "utm_campaign is missing.",
    ]


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


# --- seo.redirects -----------------------------------------------------------------------


def test_redirects_for_apache_match_exact_paths(run):
    out = run("redirect-rules-generator", rules="https://e.com/old.html /new 308\n/a /a")
    assert out["config"].splitlines()[1] == r"RedirectMatch 308 ^/old\.html/?$ /new"
    assert out["warnings"] == ["Line 2: /a redirects to itself; skipped."]


def test_redirects_for_netlify(run):
    out = run("redirect-rules-generator", rules="/a /b\n/long-path /c", server="netlify")
    assert out["config"] == "/a          /b  301\n/long-path  /c  301\n"


@pytest.mark.parametrize(
    "rules", ["/a", "/a /b 404", "/search?q=x /find"]
)  # fmt: skip
def test_redirects_refuse_malformed_lines(run, rules):
    with pytest.raises(EngineError, match="Line 1"):
        run("redirect-rules-generator", rules=rules)


# --- seo.jsonld --------------------------------------------------------------------------


def test_jsonld_script_escapes_closing_tags(run):
    out = run("faq-schema-generator", faq="Q: Is </script> safe?\nA: Yes.")
    assert "<\\/script>" in out["script"]
    assert json.loads(out["script"].split("\n", 1)[1].rsplit("\n", 1)[0]) == out["json_ld"]


@pytest.mark.parametrize(
    ("slug", "inputs", "message"),
    [
        ("faq-schema-generator", {"faq": "Q: Why?"}, "has no answer"),
        ("howto-schema-generator", {"name": "X", "steps": "only one"}, "at least two steps"),
        ("article-schema-generator", {"headline": "X", "date_published": "5 May"}, "ISO 8601"),
        ("product-schema-generator", {"name": "X"}, "an offer or a rating"),
        ("product-schema-generator", {"name": "X", "price": 1, "gtin": "123"}, "gtin"),
        ("product-schema-generator", {"name": "X", "rating_value": 4}, "rating_count"),
        ("local-business-schema-generator", {"name": "X", "city": "Y"}, "street_address"),
        (
            "local-business-schema-generator",
            {"name": "X", "street_address": "1 A St", "city": "Y", "opening_hours": "Mon 9-5"},
            "Mo-Fr 09:00-17:30",
        ),
        ("breadcrumb-schema-generator", {"trail": "Home\nShoes"}, '"Home" needs a URL'),
        ("event-schema-generator", {"name": "X"}, "start_date"),
        (
            "event-schema-generator",
            {"name": "X", "start_date": "2025-01-01", "attendance_mode": "online"},
            "online_url",
        ),
        ("organization-schema-generator", {"name": "X", "same_as": "@x"}, "same_as"),
        ("recipe-schema-generator", {"name": "X"}, "image"),
        (
            "video-schema-generator",
            {"name": "X", "thumbnail_urls": "https://e.com/t.jpg"},
            "upload_date",
        ),
    ],
)
def test_jsonld_generators_refuse_what_google_requires_but_is_missing(run, slug, inputs, message):
    with pytest.raises(EngineError, match=message):
        run(slug, **inputs)


def test_opening_hours_wrap_around_the_week_and_list_extra_days(run):
    out = run(
        "local-business-schema-generator",
        name="Night Bar",
        street_address="1 High St",
        city="Leeds",
        opening_hours="Fr-Mo 18:00-02:00\nWe, Th 9:00-12:00",
    )
    hours = out["json_ld"]["openingHoursSpecification"]
    assert hours[0]["dayOfWeek"] == ["Friday", "Saturday", "Sunday", "Monday"]
    assert hours[1] == {
        "@type": "OpeningHoursSpecification",
        "dayOfWeek": ["Wednesday", "Thursday"],
        "opens": "09:00",
        "closes": "12:00",
    }


def test_hybrid_event_lists_both_locations(run):
    out = run(
        "event-schema-generator",
        name="Summit",
        start_date="2025-06-01T09:00:00Z",
        attendance_mode="mixed",
        venue_name="Hall",
        city="Oslo",
        online_url="https://e.com/live",
        price=0,
    )
    assert [place["@type"] for place in out["json_ld"]["location"]] == ["Place", "VirtualLocation"]
    assert out["json_ld"]["offers"]["price"] == "0.00"


def test_video_duration_is_iso_8601(run):
    out = run(
        "video-schema-generator",
        name="Clip",
        thumbnail_urls="https://e.com/t.jpg",
        upload_date="2025-01-01",
        duration_seconds=3725,
    )
    assert out["json_ld"]["duration"] == "PT1H2M5S"
    assert out["warnings"] == [
        "Add content_url or embed_url so Google can fetch the video.",
        "Add a description.",
    ]
