"""``seo.serp_snippet`` (engines/web/serp.py), run through its catalogue tools."""


def test_title_checker_flags_a_short_title_without_the_keyword(run):
    result = run("title-tag-checker", title="Shoes", keyword="boots")
    assert result["issues"] == [
        "Title is 5 characters; aim for 30-60.",
        'Title does not contain the keyword "boots".',
    ]
    assert (result["characters"], result["pixel_width"], result["ok"]) == (5, 57, False)
    assert (result["keyword_found"], result["keyword_position"]) == (False, None)


def test_title_checker_truncates_the_preview_at_the_pixel_limit(run):
    result = run("title-tag-checker", title="CHEAP RUNNING SHOES FOR EVERY RUNNER ON SALE NOW")
    assert result["preview"] == "CHEAP RUNNING SHOES FOR EVERY RUNNER ON SALE ..."
    assert result["issues"] == [
        "Title is about 602 px wide; Google truncates it after about 580 px.",
        "Title is all in capitals; searchers read that as shouting.",
    ]
    assert result["keyword_found"] is None


def test_title_checker_accepts_a_good_title(run):
    result = run(
        "title-tag-checker", title="Running Shoes Tested by Marathon Runners", keyword="SHOES"
    )
    assert (result["ok"], result["issues"], result["keyword_position"]) == (True, [], 8)


def test_meta_description_checker_uses_description_limits(run):
    result = run("meta-description-checker", description="Too short.")
    assert result["recommended_characters"] == {"min": 70, "max": 160}
    assert result["max_pixel_width"] == 920
    assert result["issues"] == ["Description is 10 characters; aim for 70-160."]
