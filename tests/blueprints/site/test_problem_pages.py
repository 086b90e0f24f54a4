"""Problem ``type`` URIs lead to pages a person can read: one per code the API answers."""

import re
from pathlib import Path

import pytest
from markupsafe import escape

from blueprints.api.problem_types import PROBLEM_TYPES
from blueprints.api.problems import _HTTP_CODES
from tests.helpers import auth
from web_worker import ERROR_PAGE_CODES

ROOT = Path(__file__).resolve().parents[3]
# A code where a problem is made: Problem(<status>, "<code>", ...), code="<code>", or the
# web worker's own answers (web_worker.py).
RAISED = re.compile(
    r'(?:Problem\(\s*(\d{3}),\s*|code="|_answer_and_close\(\s*sock, (\d{3}), )"?([a-z_]+)"'
)


def codes_in_the_code_base() -> set[str]:
    sources = [*ROOT.glob("blueprints/**/*.py"), *ROOT.glob("services/*.py"), ROOT / "app.py"]
    sources.append(ROOT / "web_worker.py")
    found = {match[2] for path in sources for match in RAISED.findall(path.read_text())}
    return found | set(_HTTP_CODES.values()) | set(ERROR_PAGE_CODES.values())


def test_every_code_the_api_answers_has_a_page():
    found = codes_in_the_code_base()
    assert {"invalid_json", "quota_exceeded", "webhook_not_set", "request_timeout"} <= found
    assert found - set(PROBLEM_TYPES) == set()


def test_a_problem_answers_type_leads_to_its_page(client, make_key):
    problem = client.get("/v1/runs/nope").get_json()
    assert problem["code"] == "not_found"
    assert problem["type"] == "https://svc.test/docs/problems/not-found"
    page = client.get(problem["type"])
    assert page.status_code == 200 and page.mimetype == "text/html"
    text = page.get_data(as_text=True)
    assert "<code>not_found</code>" in text and "What to do" in text

    refused = client.post(
        "/v1/public/tools/word-counter/run", headers=auth("svc_" + "A" * 40), json={}
    ).get_json()
    assert refused["type"].endswith("/docs/problems/invalid-api-key")
    assert "X-SVC-API-Key" in client.get(refused["type"]).get_data(as_text=True)


def test_the_public_base_url_names_the_pages_when_it_is_set(app, client):
    app.config["PUBLIC_BASE_URL"] = "https://api.example.com/"
    problem = client.get("/v1/runs/nope").get_json()
    assert problem["type"] == "https://api.example.com/docs/problems/not-found"


def test_the_index_lists_every_code_and_an_unknown_one_is_404(client):
    index = client.get("/docs/problems/").get_data(as_text=True)
    for code in PROBLEM_TYPES:
        assert f"<code>{code}</code>" in index
    assert client.get("/docs/problems/no-such-code").status_code == 404


@pytest.mark.parametrize("code", sorted(PROBLEM_TYPES))
def test_each_page_says_what_it_means_and_what_to_do(client, code):
    problem = PROBLEM_TYPES[code]
    page = client.get(f"/docs/problems/{problem.slug}")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert str(escape(problem.meaning)) in text and str(escape(problem.remedy)) in text
