"""``seo.jsonld`` (engines/web/jsonld.py), run through its catalogue tools."""

import json

import pytest

from engines import EngineError

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
