"""``text.extract`` (engines/text/extract.py), run through its catalogue tools."""


def test_email_extractor_deduplicates_and_decodes_obfuscation(run):
    out = run("email-extractor", text="a@x.io, A@X.IO and bob (at) y (dot) com; not@home")
    assert [(e["email"], e["count"]) for e in out["emails"]] == [("a@x.io", 2), ("bob@y.com", 1)]
    kept = run("email-extractor", text="bob (at) y (dot) com", deobfuscate=False)
    assert kept["count"] == 0


def test_url_extractor_trims_punctuation_but_keeps_balanced_brackets(run):
    out = run("url-extractor", text="See (https://x.org/a_(b)), www.y.com. And http://localhost.")
    assert [u["url"] for u in out["urls"]] == ["https://x.org/a_(b)", "www.y.com"]


def test_phone_extractor_normalises_to_e164_and_skips_dates(run):
    out = run(
        "phone-number-extractor",
        text="Call (415) 555-0100 or +33 1 42 68 53 00 before 2024-05-01. Ref 123456789.",
    )
    assert [(n["number"], n["e164"]) for n in out["numbers"]] == [
        ("(415) 555-0100", "+14155550100"),
        ("+33 1 42 68 53 00", "+33142685300"),
    ]


def test_phone_extractor_cannot_place_a_national_number_without_its_trunk_prefix(run):
    out = run("phone-number-extractor", text="Ring 20 7946 0958", default_country="GB")
    assert out["numbers"][0]["e164"] is None


def test_hashtags_mentions_and_cashtags_are_grouped_case_insensitively(run):
    out = run("hashtag-mention-extractor", text="#AI #ai @Bob @bob x@y.com $tsla #2024")
    assert out == {
        "hashtags": [{"tag": "#AI", "count": 2}],
        "mentions": [{"handle": "@Bob", "count": 2}],
        "cashtags": [{"symbol": "$TSLA", "count": 1}],
    }


def test_date_extractor_reads_day_first_and_skips_impossible_dates(run):
    text = "Due 04/05/2024, not 31/02/2024; kickoff 1st of March 2024."
    out = run("date-extractor", text=text, day_first=True)
    assert [d["date"] for d in out["dates"]] == ["2024-05-04", "2024-03-01"]
    us = run("date-extractor", text="Due 04/05/2024")
    assert us["dates"][0]["date"] == "2024-04-05"


def test_acronym_finder_reads_definitions_in_both_orders(run):
    text = "Use a CDN. Content delivery network (CDN) costs vary. RUM (real user monitoring) too."
    out = run("acronym-finder", text=text)
    assert [(a["acronym"], a["status"]) for a in out["acronyms"]] == [
        ("CDN", "defined_late"),
        ("RUM", "defined"),
    ]
    assert out["acronyms"][1]["expansion"] == "real user monitoring"
