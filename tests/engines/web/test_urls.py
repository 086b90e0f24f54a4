"""``seo.url`` (engines/web/urls.py), run through its catalogue tools."""

import pytest

from engines import EngineError

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
