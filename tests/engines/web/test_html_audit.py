"""``seo.html_audit`` (engines/web/html_audit.py), run through its catalogue tools."""

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
