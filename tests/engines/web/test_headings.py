"""``seo.headings`` (engines/web/headings.py), run through its catalogue tools."""


def test_headings_of_html_are_outlined_with_issues(run):
    result = run(
        "heading-structure-checker", document="<h2>Intro</h2><p>x</p><h3></h3><h2>Intro</h2>"
    )
    assert result == {
        "format": "html",
        "headings": [
            {"level": 2, "text": "Intro"},
            {"level": 3, "text": ""},
            {"level": 2, "text": "Intro"},
        ],
        "outline": "  H2 Intro\n    H3\n  H2 Intro",
        "ok": False,
        "issues": [
            "There is no H1 heading; give the page exactly one.",
            "An H3 heading is empty.",
            'H2 "Intro" appears more than once.',
        ],
    }


def test_headings_of_markdown_include_setext_and_skip_code(run):
    document = "Title\n=====\n\n```\n# not a heading\n```\n\nSection\n-------\n\n### **Deep** dive"
    result = run("heading-structure-checker", document=document)
    assert result["headings"] == [
        {"level": 1, "text": "Title"},
        {"level": 2, "text": "Section"},
        {"level": 3, "text": "Deep dive"},
    ]
    assert (result["format"], result["ok"], result["issues"]) == ("markdown", True, [])


def test_headings_flag_two_h1_and_an_overlong_h1(run):
    long_title = "A " + "very " * 15 + "long title"
    result = run("heading-structure-checker", document=f"# {long_title}\n\n# Second")
    assert result["issues"] == [
        "There are 2 H1 headings; give the page exactly one.",
        f'H1 "{long_title}" is {len(long_title)} characters; keep the H1 under 70.',
    ]


def test_headings_report_a_document_without_headings(run):
    result = run("heading-structure-checker", document="Just a paragraph.", format="markdown")
    assert (result["headings"], result["issues"]) == ([], ["The document has no headings."])
