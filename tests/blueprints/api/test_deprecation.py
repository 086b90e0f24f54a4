"""A changelog entry of kind ``deprecated`` drives its endpoints: the Deprecation, Sunset and
Link headers until the sunset, 410 ``endpoint_sunset`` from it, ``deprecated: true`` in the
OpenAPI document. The changelog here is a file the tests write (``CHANGELOG_PATH``)."""

import calendar
import re
import textwrap
import time
from datetime import UTC, date, datetime, timedelta

import pytest
from openapi_spec_validator import validate

from app import create_app
from blueprints.api.problems import PROBLEM_JSON
from extensions import db
from models import Run
from services import changelog, clock
from services.changelog import ChangelogError, add_months
from tests.blueprints.api.test_run_refusals import DISPATCH, SLUG_RUN, TEXT, TOOL
from tests.helpers import app_config, auth

ENTRY_ID = "slug-run-deprecated"
TODAY = datetime.now(UTC).date()
DEPRECATED_ON = TODAY - timedelta(days=30)
SUNSET = add_months(DEPRECATED_ON, 6)  # the policy's earliest: five months from now
REPLACEMENT = "POST /v1/tools/run"
IMF_FIXDATE = re.compile(
    r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
    r"\d{4} \d{2}:\d{2}:\d{2} GMT$"
)


def write_changelog(path, entries: str):
    path.write_text(textwrap.dedent(entries), encoding="utf-8")
    return path


@pytest.fixture
def changelog_file(tmp_path):
    return write_changelog(
        tmp_path / "changelog.yaml",
        f"""\
        - date: 2026-11-21
          title: The run endpoints
          kind: added
          endpoints: ["POST /v1/public/tools/{{slug}}/run", "POST /v1/tools/run"]
          body: Runs.
        - id: {ENTRY_ID}
          date: {DEPRECATED_ON.isoformat()}
          title: The slug run endpoint and the tool page are deprecated
          kind: deprecated
          endpoints: ["POST /v1/public/tools/{{slug}}/run", "GET /v1/tools/{{slug}}"]
          sunset: {SUNSET.isoformat()}
          replacement: "{REPLACEMENT}"
          body: Use the dispatcher.
        """,
    )


@pytest.fixture
def app_settings(changelog_file):
    """``app`` (and so ``client`` and ``make_key``) on the changelog above."""
    return {"CHANGELOG_PATH": str(changelog_file)}


def expected_headers() -> dict:
    return {
        "Deprecation": f"@{calendar.timegm(DEPRECATED_ON.timetuple())}",
        "Sunset": time.strftime("%a, %d %b %Y 00:00:00 GMT", SUNSET.timetuple()),
        "Link": f'<https://svc.test/api/changelog/#{ENTRY_ID}>; rel="deprecation"',
    }


def run_rows() -> int:
    db.session.expire_all()
    return db.session.scalar(db.select(db.func.count(Run.id)))


def test_a_deprecated_endpoint_answers_the_three_headers(client, make_key):
    raw = make_key()
    response = client.post(SLUG_RUN, headers=auth(raw), json={"input": TEXT})
    assert response.status_code == 200, response.get_json()
    expected = expected_headers()
    assert {name: response.headers.get(name) for name in expected} == expected
    assert IMF_FIXDATE.match(response.headers["Sunset"])
    assert int(response.headers["Deprecation"][1:]) == int(
        datetime(DEPRECATED_ON.year, DEPRECATED_ON.month, DEPRECATED_ON.day, tzinfo=UTC).timestamp()
    )
    # Whatever the status: a refusal of the same endpoint says so too.
    refused = client.post(SLUG_RUN, json={"input": TEXT})
    assert refused.status_code == 401
    assert refused.headers["Deprecation"] == expected["Deprecation"]
    assert refused.headers["Link"] == expected["Link"]
    # The replacement and other routes carry none of them.
    other = client.post(DISPATCH, headers=auth(raw), json={"slug": TOOL, "input": TEXT})
    assert other.status_code == 200
    assert not {"Deprecation", "Sunset", "Link"} & set(other.headers.keys())


def test_a_deprecated_get_covers_head_and_only_its_own_route(client):
    for method in ("get", "head"):
        response = getattr(client, method)(f"/v1/tools/{TOOL}")
        assert response.status_code == 200
        assert response.headers["Deprecation"] == expected_headers()["Deprecation"]
    assert "Deprecation" not in client.get("/v1/tools").headers


def test_the_link_is_added_to_a_link_the_answer_has(app, client):
    @app.after_request
    def other_link(response):  # registered later, so it runs before the deprecation hook
        response.headers["Link"] = '<https://svc.test/v1/tools?page=2>; rel="next"'
        return response

    response = client.get(f"/v1/tools/{TOOL}")
    assert response.headers.getlist("Link") == [
        '<https://svc.test/v1/tools?page=2>; rel="next", ' + expected_headers()["Link"]
    ]


def test_the_link_names_the_public_base_url_when_it_is_set(app, client):
    app.config["PUBLIC_BASE_URL"] = "https://api.example.com/"
    response = client.get(f"/v1/tools/{TOOL}")
    assert response.headers["Link"].startswith(
        f"<https://api.example.com/api/changelog/#{ENTRY_ID}>"
    )


def test_the_openapi_operation_is_marked_deprecated(client):
    document = client.get("/v1/openapi.json").get_json()
    validate(document)
    operation = document["paths"]["/v1/public/tools/{slug}/run"]["post"]
    assert operation["deprecated"] is True
    assert SUNSET.isoformat() in operation["description"]
    assert REPLACEMENT in operation["description"]
    assert set(operation["responses"]["200"]["headers"]) >= {"Deprecation", "Sunset", "Link"}
    gone = operation["responses"]["410"]
    assert "[endpoint_sunset]" in gone["description"] and REPLACEMENT in gone["description"]
    assert document["paths"]["/v1/tools/{slug}"]["get"]["deprecated"] is True
    assert "deprecated" not in document["paths"]["/v1/tools/run"]["post"]
    assert "deprecated" not in document["paths"]["/v1/tools"]["get"]


def test_after_the_sunset_the_endpoint_answers_410_and_runs_nothing(client, make_key):
    raw = make_key()
    sunset_at = changelog.midnight_utc(SUNSET)
    clock.set_offset(sunset_at - datetime.now(UTC) - timedelta(minutes=1))
    still = client.post(SLUG_RUN, headers=auth(raw), json={"input": TEXT})
    assert still.status_code == 200  # a minute before the sunset
    assert run_rows() == 1

    clock.set_offset(sunset_at - datetime.now(UTC) + timedelta(seconds=1))
    for headers in (auth(raw), {}):  # no key is needed to learn the endpoint is gone
        response = client.post(SLUG_RUN, headers=headers, json={"input": TEXT})
        assert response.status_code == 410
        assert response.mimetype == PROBLEM_JSON
        problem = response.get_json()
        assert problem["code"] == "endpoint_sunset"
        assert problem["type"] == "https://svc.test/docs/problems/endpoint-sunset"
        assert REPLACEMENT in problem["detail"] and problem["replacement"] == REPLACEMENT
        assert problem["changelog"] == f"https://svc.test/api/changelog/#{ENTRY_ID}"
        assert problem["request_id"] == response.headers["X-Request-Id"] != ""
        assert response.headers["Sunset"] == expected_headers()["Sunset"]
    assert run_rows() == 1  # the view never ran
    gone = client.get(f"/v1/tools/{TOOL}")
    assert gone.status_code == 410 and gone.get_json()["replacement"] == REPLACEMENT
    # The replacement still works.
    replacement = client.post(DISPATCH, headers=auth(raw), json={"slug": TOOL, "input": TEXT})
    assert replacement.status_code == 200
    assert run_rows() == 2


def test_an_app_without_deprecations_adds_no_hook(_schema):
    app = create_app(app_config())
    assert "deprecations_by_rule" not in app.extensions
    with app.app_context():
        assert changelog.current().deprecations == {}
    response = app.test_client().get(f"/v1/tools/{TOOL}")
    assert "Deprecation" not in response.headers


def test_a_deprecation_of_no_route_is_logged(tmp_path, caplog):
    path = write_changelog(
        tmp_path / "changelog.yaml",
        """\
        - date: 2026-01-05
          title: Gone already
          kind: deprecated
          endpoints: ["GET /v1/nowhere"]
          sunset: 2026-07-05
          replacement: "GET /v1/tools"
          body: Nothing.
        """,
    )
    app = create_app(app_config(CHANGELOG_PATH=str(path)))
    with caplog.at_level("WARNING", logger="blueprints.api.deprecation"):
        assert app.test_client().get("/v1/tools").status_code == 200
    assert "GET /v1/nowhere" in caplog.text


# --- the policy, in the loader ---------------------------------------------------------


def deprecation(day: str, sunset: str, **extra) -> list[dict]:
    entry = {
        "date": day,
        "title": "Old endpoint",
        "kind": "deprecated",
        "endpoints": ["GET /v1/tools/{slug}"],
        "sunset": sunset,
        "replacement": "GET /v1/tools",
        "body": "Moving on.",
        **extra,
    }
    return [entry]


@pytest.mark.parametrize(
    "day, sunset",
    [("2027-01-15", "2027-07-14"), ("2027-01-15", "2027-01-15"), ("2027-08-31", "2028-02-28")],
)
def test_the_loader_refuses_a_sunset_less_than_six_months_after(day, sunset):
    with pytest.raises(ChangelogError, match="less than 6 months") as refused:
        changelog.parse(deprecation(day, sunset), source="docs/changelog.yaml")
    assert "docs/changelog.yaml: entry 1 ('Old endpoint')" in str(refused.value)


def test_six_months_to_the_day_is_enough_and_the_headers_are_exact():
    log = changelog.parse(deprecation("2027-01-15", "2027-07-15"))
    found = log.deprecations["GET /v1/tools/{slug}"]
    assert found.deprecation_header == "@1799971200"  # 2027-01-15T00:00:00Z
    assert found.sunset_header == "Thu, 15 Jul 2027 00:00:00 GMT"
    assert found.entry.id == "2027-01-15-old-endpoint"
    # A month-end clamps: 31 August + 6 months is the last day of February.
    assert changelog.parse(deprecation("2027-08-31", "2028-02-29")).deprecations


@pytest.mark.parametrize(
    "change, message",
    [
        ({"sunset": None}, "`sunset` must be a date"),
        ({"replacement": None}, "needs a `replacement`"),
        ({"endpoints": []}, "names the endpoints it deprecates"),
        ({"endpoints": ["GET /v1/tools/<slug>"]}, "write path variables as {name}"),
        ({"replacement": "GET /v1/tools/{slug}"}, "is one of the deprecated endpoints"),
    ],
)
def test_the_loader_refuses_an_incomplete_deprecation(change, message):
    entries = deprecation("2027-01-15", "2027-09-01")
    entries[0].update(change)
    with pytest.raises(ChangelogError, match=re.escape(message)):
        changelog.parse(entries)


def test_the_loader_refuses_a_sunset_outside_a_deprecation():
    entries = deprecation("2027-01-15", "2027-09-01")
    entries[0]["kind"] = "changed"
    with pytest.raises(ChangelogError, match="belongs to deprecated entries only"):
        changelog.parse(entries)


def test_an_endpoint_deprecated_twice_is_refused():
    entries = deprecation("2027-01-15", "2027-09-01") + deprecation("2027-02-15", "2027-09-01")
    entries[1]["title"] = "Again"
    with pytest.raises(ChangelogError, match="already deprecates"):
        changelog.parse(entries)


def test_a_bad_file_refuses_start_up(tmp_path):
    path = write_changelog(
        tmp_path / "changelog.yaml",
        """\
        - date: 2027-01-15
          title: Too soon
          kind: deprecated
          endpoints: ["GET /v1/tools/{slug}"]
          sunset: 2027-03-01
          replacement: "GET /v1/tools"
          body: No.
        """,
    )
    with pytest.raises(ChangelogError, match="Too soon.*less than 6 months"):
        create_app(app_config(CHANGELOG_PATH=str(path)))


def test_dates_are_days():
    assert changelog.add_months(date(2027, 1, 31), 1) == date(2027, 2, 28)
    with pytest.raises(ChangelogError, match="YYYY-MM-DD"):
        changelog.parse(deprecation("15/01/2027", "2027-09-01"))
