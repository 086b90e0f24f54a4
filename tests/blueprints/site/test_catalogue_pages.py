"""The catalogue's pages: /, /tools/ (search, filters, htmx fragments), /workflows/,
/workflows/<id>/, /pricing, robots.txt and sitemap.xml."""

import re
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from blueprints.site.catalogue import stages
from catalogue import load_catalogue, load_workflows

HX = {"HX-Request": "true"}
TOOL_LINK = re.compile(r'<li><a href="/tools/([a-z0-9-]+)/">')
COUNT = re.compile(r'<p id="tool-count"[^>]*>([^<]*)</p>')


@pytest.fixture(scope="module")
def catalogue():
    return load_catalogue()


def listed(html: str) -> list[str]:
    """The tools a /tools/ answer lists, in order."""
    return TOOL_LINK.findall(html)


def count_of(html: str) -> str:
    return " ".join(COUNT.search(html).group(1).split())


def test_tools_lists_every_tool_by_category(client, catalogue):
    page = client.get("/tools/")
    assert page.status_code == 200 and page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert sorted(listed(html)) == sorted(catalogue.tools)
    assert count_of(html) == f"{len(catalogue)} tools"
    assert html.count("<h1") == 1
    for category in catalogue.categories():
        assert f'id="c-{category}"' in html
    # the form works without JavaScript: a GET form with labelled controls
    assert '<form class="tool-filters" method="get" action="/tools/"' in html
    for control in ("tool-q", "tool-category", "tool-plan"):
        assert f'<label for="{control}">' in html
    assert 'role="status" aria-live="polite"' in html


def test_a_search_narrows_by_name_slug_and_summary(client, catalogue):
    by_name = listed(client.get("/tools/?q=Word+Counter").get_data(as_text=True))
    assert by_name[0] == "word-counter"
    assert by_name == [tool.slug for tool in catalogue.search("word counter")]

    # "bio-writer" is in slugs only (the name reads "Professional Bio Writer")
    by_slug = [tool.slug for tool in catalogue if "bio-writer" in tool.slug]
    html = client.get("/tools/?q=bio-writer").get_data(as_text=True)
    assert "bio-writer" in by_slug and listed(html) == by_slug
    plural = "s" if len(by_slug) > 1 else ""
    assert count_of(html) == f"{len(by_slug)} tool{plural} matching “bio-writer”"
    assert count_of(client.get("/tools/?q=word-counter").get_data(as_text=True)) == (
        "1 tool matching “word-counter”"
    )

    summary_word = "perceptual"  # in summaries, not in every name
    expected = [t.slug for t in catalogue if summary_word in t.summary.lower()]
    html = client.get(f"/tools/?q={summary_word}").get_data(as_text=True)
    assert sorted(listed(html)) == sorted(expected)
    assert count_of(html) == f"{len(expected)} tools matching “{summary_word}”"


def test_no_match_says_so(client):
    html = client.get("/tools/?q=zzqxv").get_data(as_text=True)
    assert listed(html) == []
    assert count_of(html) == "No tool matches “zzqxv”."


def test_htmx_gets_the_results_alone_and_both_answers_vary(client, catalogue):
    full = client.get("/tools/?q=resize")
    fragment = client.get("/tools/?q=resize", headers=HX)
    for answer in (full, fragment):
        assert answer.status_code == 200
        assert "HX-Request" in answer.headers["Vary"]
    body = fragment.get_data(as_text=True)
    assert "<html" not in body and "<form" not in body and "<h1" not in body
    assert listed(body) == listed(full.get_data(as_text=True))
    assert listed(body) == [tool.slug for tool in catalogue.search("resize")]
    # the count goes to the page's live region, out of band
    assert '<p id="tool-count" hx-swap-oob="innerHTML">' in body
    # restoring a page from history needs all of it
    restore = client.get("/tools/?q=resize", headers={**HX, "HX-History-Restore-Request": "true"})
    assert "<html" in restore.get_data(as_text=True)


def test_category_and_plan_filters(client, catalogue):
    html = client.get("/tools/?category=seo").get_data(as_text=True)
    seo = [tool.slug for tool in catalogue.filter(category="seo")]
    assert sorted(listed(html)) == sorted(seo)
    assert count_of(html) == f"{len(seo)} tools in SEO"
    assert '<option value="seo" selected>' in html

    html = client.get("/tools/?plan=pro&category=image-generation&q=").get_data(as_text=True)
    found = catalogue.filter(category="image-generation", plan="pro")
    assert sorted(listed(html)) == sorted(tool.slug for tool in found)
    assert all(tool.required_plan == "pro" for tool in found)
    assert '<option value="pro" selected>' in html

    creator = [tool.slug for tool in catalogue if tool.required_plan == "creator"]
    assert creator  # the Pro filter leaves them out
    pro_only = listed(client.get("/tools/?plan=pro").get_data(as_text=True))
    assert not set(creator) & set(pro_only)

    html = client.get("/tools/?q=image&category=image-editing", headers=HX).get_data(as_text=True)
    assert listed(html) == [t.slug for t in catalogue.search("image", category="image-editing")]


def test_a_tool_that_cannot_run_here_says_so(app, client, catalogue):
    with app.app_context():
        reasons = [t.unavailable_reason for t in catalogue.filter(category="image-generation")]
    page = client.get("/tools/?category=image-generation").get_data(as_text=True)
    html = page.split('<div id="tool-results">')[1]  # not the legend above
    assert html.count("needs a provider") == sum("provider" in (r or "") for r in reasons)
    assert html.count('<span class="badge">queued</span>') == sum(
        t.queue for t in catalogue.filter(category="image-generation")
    )


@pytest.mark.parametrize(
    "query", ["category=nope", "plan=platinum", "category=%3Cscript%3E", "plan=free"]
)
def test_an_unknown_filter_is_a_400_page(client, query):
    page = client.get(f"/tools/?{query}")
    assert page.status_code == 400 and page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert 'role="alert"' in html and "There is no" in html
    assert "<script>" not in html
    assert "HX-Request" in page.headers["Vary"]
    assert client.get(f"/tools/?{query}", headers=HX).status_code == 400


@pytest.mark.parametrize(
    "q", ["x" * 100_000, "%00%FF%FE", "%F0%9F%92%A5 " * 500, "<script>alert(1)</script>", "%"]
)
def test_any_query_text_is_answered(client, q):
    for headers in ({}, HX):
        page = client.get(f"/tools/?q={q}", headers=headers)
        assert page.status_code == 200
        assert "<script>alert" not in page.get_data(as_text=True)


def test_workflows_list_each_with_its_plan_and_credits(client):
    html = client.get("/workflows/").get_data(as_text=True)
    for workflow in load_workflows():
        assert f'<a href="/workflows/{workflow.id}/">{workflow.name}</a>' in html
        assert f"{workflow.credits} credits a run" in html


def test_a_workflow_page_shows_its_stages(client):
    workflow = load_workflows().get("content-creator")
    found = stages(workflow)
    # the post first, then what is made from it at once
    assert [[step.id for step in stage.steps] for stage in found] == [
        ["post"],
        ["image", "thread", "linkedin", "newsletter"],
    ]
    page = client.get("/workflows/content-creator/")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "Stage 1" in html and "Stage 2" in html and "4 steps in parallel" in html
    assert "Creator" in html and f"<dd>{workflow.credits} " in html
    for step in workflow.steps:
        assert f'href="/tools/{step.tool}/"' in html


def test_stages_follow_the_graph_of_every_workflow():
    for workflow in load_workflows():
        stage_of = {step.id: stage.number for stage in stages(workflow) for step in stage.steps}
        assert sorted(stage_of) == sorted(step.id for step in workflow.steps)
        for step in workflow.steps:
            deps = [stage_of[dep] for dep in step.depends_on]
            assert stage_of[step.id] == 1 + max(deps, default=0)


def test_an_unknown_workflow_is_the_sites_404(client):
    page = client.get("/workflows/no-such-workflow/")
    assert page.status_code == 404 and page.mimetype == "text/html"
    assert "This page does not exist" in page.get_data(as_text=True)


def test_robots_txt(client):
    page = client.get("/robots.txt")
    assert page.status_code == 200 and page.mimetype == "text/plain"
    lines = page.get_data(as_text=True).splitlines()
    assert lines[0] == "User-agent: *"
    for path in ("/account/", "/runs/", "/v1/tools/run/", "/v1/workflows/run/"):
        assert f"Disallow: {path}" in lines
    assert "Disallow: /" not in lines
    assert "Sitemap: https://svc.test/sitemap.xml" in lines


def test_sitemap_lists_every_page_absolute(app, client, catalogue):
    page = client.get("/sitemap.xml")
    assert page.status_code == 200 and page.mimetype == "application/xml"
    root = ET.fromstring(page.data)
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    assert root.tag == "{http://www.sitemaps.org/schemas/sitemap/0.9}urlset"
    urls = [loc.text for loc in root.findall("s:url/s:loc", ns)]
    assert len(urls) == len(set(urls))
    assert all(url.startswith("https://svc.test/") for url in urls)
    for path in ("/", "/tools/", "/workflows/", "/pricing", "/docs", "/api/changelog/"):
        assert f"https://svc.test{path}" in urls
    for slug in catalogue.tools:
        assert f"https://svc.test/tools/{slug}/" in urls
    for workflow in load_workflows():
        assert f"https://svc.test/workflows/{workflow.id}/" in urls

    app.config["PUBLIC_BASE_URL"] = "https://www.example.com/"
    assert b"<loc>https://www.example.com/tools/</loc>" in client.get("/sitemap.xml").data
    assert b"Sitemap: https://www.example.com/sitemap.xml" in client.get("/robots.txt").data


def test_home_lists_categories_with_counts_and_featured_workflows(client, catalogue):
    page = client.get("/")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    counts = {
        category: int(count)
        for category, count in re.findall(
            r'<a href="/tools/\?category=([a-z-]+)">[^<]+</a> <span class="muted">(\d+) tools?',
            html,
        )
    }
    assert counts == dict(Counter(tool.category for tool in catalogue))
    assert sum(counts.values()) == len(catalogue)
    featured = re.findall(r'<h3><a href="/workflows/([a-z0-9-]+)/">', html)
    assert 3 <= len(featured) <= 6
    assert '<form class="home-search" method="get" action="/tools/">' in html
    assert 'href="/docs"' in html and html.count("<h1") == 1


def test_pricing_highlights_the_plan_asked_for(client):
    html = client.get("/pricing?plan=creator").get_data(as_text=True)
    assert '<tr id="plan-creator" class="wanted" aria-current="true">' in html
    assert "You need the <strong>Creator</strong> plan" in html
    assert '<div class="table-scroll"' in html and "5 runs a day" in html
    odd = client.get("/pricing?plan=%3Cb%3E").get_data(as_text=True)
    assert "You need the" not in odd and "<b>" not in odd


def test_catalogue_pages_run_no_inline_script_or_style(client):
    for path in ("/", "/tools/", "/tools/?q=pdf", "/workflows/", "/workflows/meeting-recap/"):
        html = client.get(path).get_data(as_text=True)
        assert "<style" not in html and " style=" not in html and "hx-on" not in html
        assert not re.search(r"<script(?![^>]*\bsrc=)", html)
