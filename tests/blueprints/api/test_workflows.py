"""Workflows through the API on the embedded default (SQLite, the in-process queue) with the
fake model provider: every workflow end to end, parallel steps, plans, quota, credits,
failures, cancel, events and who may see a run."""

import base64
import itertools
import time
from datetime import datetime

import pytest
from jsonschema import Draft202012Validator

from catalogue import load_catalogue, load_workflows
from engines import get_engine
from engines.blob import Blob
from extensions import db
from models import UsageEvent, WorkflowRun
from services import accounts, keys
from tests.engines import fixtures
from tests.helpers import auth, embedded_app_at, sse_events

START = "/v1/workflows/run"
WORKFLOWS = sorted(workflow.id for workflow in load_workflows())
SPOKEN = "Welcome to the weekly meeting. The budget review starts at noon, then hiring."
DOCUMENT = (
    "Remote work changed how our team plans. We now write every proposal down before the "
    "meeting, so decisions take one call instead of three. Reviews happen asynchronously, "
    "and the meeting time we saved went into pairing on the hardest problems.\n\n"
    "The cost is slower small talk and fewer chance conversations; a weekly unstructured "
    "call keeps the team close."
)
ENDED = {"succeeded", "failed", "canceled"}


def data_uri(blob: Blob) -> str:
    return f"data:{blob.content_type};base64," + base64.b64encode(blob.data).decode()


@pytest.fixture(scope="module")
def wf_app(tmp_path_factory, fake_provider):
    """The embedded default, for the module, with ``fake_provider`` as its model provider."""
    path = tmp_path_factory.mktemp("wf") / "runs.db"
    with embedded_app_at(path, AI_BASE_URL=fake_provider.base_url, AI_TIMEOUT_SECONDS=5.0) as app:
        yield app


@pytest.fixture
def client(wf_app):
    """A client of ``wf_app`` (``fake_provider`` is reset around each test: a test's scripted
    failures never leak into the next one)."""
    return wf_app.test_client()


@pytest.fixture
def sent(monkeypatch):
    """The events handed to jobs.webhooks.emit: (key id, event, event id)."""
    events = []
    monkeypatch.setattr(
        "jobs.workflows.emit",
        lambda key_id, event, event_id: events.append((key_id, event, event_id)),
    )
    return events


_emails = itertools.count(1)


@pytest.fixture
def make_key(wf_app):
    """A key on ``plan`` (its account's free calls used up, so credits show), and its id."""

    def make(plan="agency", *, free_calls_used=100, sandbox=False, **fields):
        with wf_app.app_context():
            account = accounts.create_account(f"wf{next(_emails)}@example.com", plan)
            account.free_calls_used = free_calls_used
            key, raw = keys.create_key(account, "workflows", sandbox=sandbox)
            for name, value in fields.items():
                setattr(key, name, value)
            db.session.commit()
            return raw, key.id

    return make


@pytest.fixture(scope="module")
def inputs():
    """An input per workflow: its example, or a small generated file for file workflows."""
    speech = get_engine("speech.synthesize").run({"text": SPOKEN, "format": "wav"}, {})["audio"]
    screenshot = fixtures.text_image(["def add(a, b):", "    return a + b"], size=(900, 260))
    files = {
        "podcast-repurposer": data_uri(speech),
        "meeting-recap": data_uri(speech),
        "document-to-video": data_uri(Blob(DOCUMENT.encode(), "text/plain", "notes.txt")),
        "screenshot-to-code": data_uri(screenshot),
    }
    return {wid: files.get(wid, load_workflows().get(wid).example) for wid in WORKFLOWS}


def start(client, raw, workflow_id, value, **headers):
    return client.post(
        START, headers={**auth(raw), **headers}, json={"workflow_id": workflow_id, "input": value}
    )


def until_ended(client, raw, location, seconds=120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        record = client.get(location, headers=auth(raw)).get_json()
        if record["status"] in ENDED:
            return record
        time.sleep(0.1)
    pytest.fail(f"the workflow run did not end: {record}")


def until(predicate, seconds=10):
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail("the condition never held")
        time.sleep(0.05)


def calls_today(client, raw) -> int:
    return client.get("/v1/public/whoami", headers=auth(raw)).get_json()["usage"]["calls_today"]


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


# --- end to end --------------------------------------------------------------------------


@pytest.mark.parametrize("workflow_id", WORKFLOWS)
def test_every_workflow_runs_end_to_end(client, make_key, sent, inputs, workflow_id):
    workflow = load_workflows().get(workflow_id)
    tools = load_catalogue()
    raw, key_id = make_key()
    response = start(client, raw, workflow_id, inputs[workflow_id])
    assert response.status_code == 202, response.get_json()
    accepted = response.get_json()
    assert set(accepted) == {"run_id", "workflow_id", "status", "status_url", "created_at"}
    assert (accepted["workflow_id"], accepted["status"]) == (workflow_id, "queued")
    location = response.headers["Location"]
    assert location == f"/v1/workflows/run/{accepted['run_id']}/status"
    assert accepted["status_url"].endswith(location)

    record = until_ended(client, raw, location)

    assert record["status"] == "succeeded", record["error"]
    assert record["error"] is None and record["finished_at"] and record["duration_ms"] >= 0
    total = len(workflow.steps)
    assert record["progress"] == {"completed_steps": total, "total_steps": total}
    assert [step["id"] for step in record["steps"]] == [step.id for step in workflow.steps]
    for step in record["steps"]:
        assert step["status"] == "succeeded" and step["error"] is None
        assert step["credits"] == tools.get(step["tool"]).credits
        Draft202012Validator(tools.get(step["tool"]).output).validate(step["output"])
        for dependency in step["depends_on"]:
            earlier = next(s for s in record["steps"] if s["id"] == dependency)
            assert moment(earlier["finished_at"]) <= moment(step["started_at"])
    Draft202012Validator(workflow.output_schema).validate(record["output"])
    assert record["credits"] == workflow.credits
    assert calls_today(client, raw) == total
    until(lambda: sent)
    assert len(sent) == 1
    emitted_key, event, event_id = sent[0]
    assert (emitted_key, event_id) == (key_id, f"evt_{accepted['run_id']}")
    assert event["event"] == "workflow.completed"
    assert event["run_id"] == accepted["run_id"] and event["workflow_id"] == workflow_id
    assert event["tool"] == workflow.final_step.tool
    assert event["duration_ms"] == record["duration_ms"]
    assert 0 < len(event["output_excerpt"]) <= 280


def test_a_workflow_file_output_is_served(client, make_key, inputs):
    raw, _ = make_key()
    response = start(client, raw, "document-to-video", inputs["document-to-video"])
    record = until_ended(client, raw, response.headers["Location"])
    video = record["output"]["video"]
    served = client.get(video["url"].split("svc.test", 1)[1])
    assert served.status_code == 200 and served.mimetype == "video/mp4"
    assert served.get_data()[4:8] == b"ftyp"
    # Three bullets became three scenes over the narration.
    assert len(next(s for s in record["steps"] if s["id"] == "video")["output"]["scenes"]) == 3


def test_independent_steps_run_at_the_same_time(client, make_key, fake_provider):
    raw, _ = make_key()
    fake_provider.hang_next(3, 0.6)  # the three first steps each take 0.6 s at the provider
    response = start(client, raw, "code-to-docs", "def add(a, b):\n    return a + b\n")
    record = until_ended(client, raw, response.headers["Location"])
    assert record["status"] == "succeeded"
    first = [s for s in record["steps"] if not s["depends_on"]]
    spans = [(moment(s["started_at"]), moment(s["finished_at"])) for s in first]
    overlapping = [
        (a, b) for a, b in itertools.combinations(spans, 2) if a[0] < b[1] and b[0] < a[1]
    ]
    assert overlapping, spans
    readme = next(s for s in record["steps"] if s["id"] == "readme")
    explanation = next(s for s in record["steps"] if s["id"] == "explanation")
    assert moment(readme["started_at"]) >= moment(explanation["finished_at"])


# --- plans, quota, credits ---------------------------------------------------------------


def test_a_step_above_the_plan_is_402_before_anything_runs(client, make_key, wf_app):
    raw, key_id = make_key("pro")
    response = start(client, raw, "content-creator", "Composting at home")
    assert response.status_code == 402
    problem = response.get_json()
    assert (problem["code"], problem["required_plan"]) == ("plan_required", "creator")
    assert problem["upgrade_url"].endswith("/pricing?plan=creator")
    assert calls_today(client, raw) == 0
    with wf_app.app_context():
        started = db.select(db.func.count(WorkflowRun.id)).where(WorkflowRun.api_key_id == key_id)
        assert db.session.scalar(started) == 0


@pytest.mark.parametrize("plan", ["free", "starter"])
def test_free_and_starter_keys_are_403(client, make_key, plan):
    raw, _ = make_key(plan)
    response = start(client, raw, "code-to-docs", "x = 1")
    assert response.status_code == 403
    assert (response.get_json()["code"], response.get_json()["required_plan"]) == (
        "plan_required",
        "pro",
    )


def test_quota_is_reserved_for_every_step_at_start_all_or_nothing(client, make_key, fake_provider):
    raw, _ = make_key("pro", daily_override=8)
    fake_provider.hang_next(1, 0.5)
    first = start(client, raw, "product-launch", "A reusable beeswax food wrap")
    assert first.status_code == 202
    assert calls_today(client, raw) == 5  # five steps reserved before any ran
    refused = start(client, raw, "code-to-docs", "x = 1")  # four steps; three calls left
    assert refused.status_code == 429
    problem = refused.get_json()
    assert (problem["code"], problem["limit"], problem["remaining"]) == ("quota_exceeded", 8, 0)
    assert int(refused.headers["Retry-After"]) > 0
    assert until_ended(client, raw, first.headers["Location"])["status"] == "succeeded"
    assert calls_today(client, raw) == 5
    assert start(client, raw, "review-insights", "Great app, but sync fails.").status_code == 202
    assert calls_today(client, raw) == 8


def test_credits_are_charged_per_completed_step_and_recorded_in_the_ledger(
    client, make_key, wf_app
):
    raw, _ = make_key("pro")
    response = start(client, raw, "review-insights", "Great app. Sync fails every day, though.")
    record = until_ended(client, raw, response.headers["Location"])
    # sentiment-analyzer 1 (fast text), feedback-theme-synthesizer 2, executive summary 2.
    assert [s["credits"] for s in record["steps"]] == [1, 2, 2] and record["credits"] == 5
    with wf_app.app_context():
        ledger = db.session.execute(
            db.select(UsageEvent.tool_slug, UsageEvent.credits, UsageEvent.run_id).where(
                UsageEvent.run_id.in_([s["run_id"] for s in record["steps"]])
            )
        ).all()
    assert sorted((slug, credits) for slug, credits, _ in ledger) == [
        ("executive-summary-writer", 2),
        ("feedback-theme-synthesizer", 2),
        ("sentiment-analyzer", 1),
    ]


def test_the_first_free_calls_cover_workflow_steps_too(client, make_key):
    raw, _ = make_key("pro", free_calls_used=98)
    response = start(client, raw, "review-insights", "Great app. Sync fails every day, though.")
    record = until_ended(client, raw, response.headers["Location"])
    assert sorted(s["credits"] for s in record["steps"]) == [0, 0, 2]


# --- events ----------------------------------------------------------------------------


def stream(client, raw, run_id) -> list[tuple[str, dict]]:
    """(event, data) of the run's event stream, read to its end."""
    body = client.get(f"/v1/workflows/run/{run_id}/events", headers=auth(raw)).get_data(True)
    return [(kind, data) for _, kind, data in sse_events(body)]


def test_a_workflow_runs_events_tell_each_steps_start_text_and_end_then_done(client, make_key):
    raw, _ = make_key("pro")
    response = start(client, raw, "product-launch", "A reusable beeswax food wrap")
    run_id = response.get_json()["run_id"]

    events = stream(client, raw, run_id)  # followed from the start, while it runs

    record = client.get(response.headers["Location"], headers=auth(raw)).get_json()
    assert events[-1] == ("done", record) and record["status"] == "succeeded"
    steps = {step["id"]: step for step in record["steps"]}
    for step_id, step in steps.items():
        mine = [(kind, data) for kind, data in events if data.get("step") == step_id]
        kinds = [kind for kind, _ in mine]
        assert kinds[0] == "step_started" and kinds[-1] == "step_ended", kinds
        assert set(kinds[1:-1]) <= {"delta"}
        assert mine[0][1] == {"step": step_id, "tool": step["tool"], "run_id": step["run_id"]}
        assert mine[-1][1]["status"] == "succeeded"
        if "delta" in kinds:  # a step writing free text: its deltas are its text
            assert (
                "".join(data["text"] for kind, data in mine if kind == "delta")
                == (step["output"]["text"])
            )
    assert any(kind == "delta" for kind, _ in events)
    started = [data["step"] for kind, data in events if kind == "step_started"]
    assert started[0] == "description" and sorted(started) == sorted(steps)

    # Replayed whole once it has ended; another account's run does not exist.
    assert stream(client, raw, run_id) == events
    other, _ = make_key("pro")
    refused = client.get(f"/v1/workflows/run/{run_id}/events", headers=auth(other))
    assert refused.status_code == 404 and refused.get_json()["code"] == "run_not_found"


# --- failures and cancel -----------------------------------------------------------------


def test_a_failing_first_step_fails_the_run_and_no_later_step_starts(
    client, make_key, fake_provider, sent, wf_app
):
    raw, key_id = make_key("pro")
    chats = len(fake_provider.calls("/v1/chat/completions"))
    fake_provider.fail_next(1, status=400)
    response = start(client, raw, "product-launch", "A reusable beeswax food wrap")
    record = until_ended(client, raw, response.headers["Location"])
    assert record["status"] == "failed"
    error = record["error"]
    assert (error["code"], error["step"], error["tool"]) == (
        "input",
        "description",
        "product-description-writer",
    )
    assert error["message"].startswith("The step description (product-description-writer) failed")
    steps = {s["id"]: s for s in record["steps"]}
    assert steps["description"]["status"] == "failed"
    for later in ("titles", "meta", "ads", "search_ads"):
        assert steps[later]["status"] == "canceled" and steps[later]["started_at"] is None
    time.sleep(0.3)
    assert len(fake_provider.calls("/v1/chat/completions")) == chats + 1  # nothing else was asked
    assert record["progress"] == {"completed_steps": 0, "total_steps": 5}
    assert record["credits"] == 0 and calls_today(client, raw) == 0
    until(lambda: sent)
    assert [(k, e["event"], e["tool"]) for k, e, _ in sent] == [
        (key_id, "workflow.failed", "product-description-writer")
    ]
    assert sent[0][1]["output_excerpt"] == error["message"][:280]
    *_, (kind, problem) = stream(client, raw, record["run_id"])
    assert kind == "error" and (problem["status"], problem["code"]) == (422, "validation_failed")
    assert (problem["step"], problem["tool"]) == ("description", "product-description-writer")
    assert problem["detail"] == error["message"]


def test_a_later_failure_keeps_the_completed_steps_quota_and_credits(
    client, make_key, fake_provider, sent, wf_app
):
    raw, _ = make_key("pro")
    fake_provider.hang_next(1, 0.2)  # the description succeeds...
    fake_provider.fail_next(20, status=400)  # ...and every step after it fails at the provider
    response = start(client, raw, "product-launch", "A reusable beeswax food wrap")
    record = until_ended(client, raw, response.headers["Location"])
    assert record["status"] == "failed"
    assert record["error"]["step"] in {"titles", "meta", "ads", "search_ads"}
    steps = {s["id"]: s for s in record["steps"]}
    assert steps["description"]["status"] == "succeeded" and steps["description"]["output"]
    assert {steps[s]["status"] for s in steps if s != "description"} <= {"failed", "canceled"}
    assert record["progress"]["completed_steps"] == 1
    time.sleep(0.5)  # let the failed siblings' jobs finish
    assert calls_today(client, raw) == 1
    assert until_ended(client, raw, response.headers["Location"])["credits"] == 1
    with wf_app.app_context():
        charged = db.session.scalars(
            db.select(UsageEvent.tool_slug).where(
                UsageEvent.run_id.in_([s["run_id"] for s in record["steps"]])
            )
        ).all()
    assert charged == ["product-description-writer"]
    assert [e["event"] for _, e, _ in sent] == ["workflow.failed"]


def test_cancel_stops_further_steps_and_releases_their_quota(client, make_key, fake_provider, sent):
    raw, _ = make_key("pro")
    chats = len(fake_provider.calls("/v1/chat/completions"))
    fake_provider.hang_next(1, 1.0)
    response = start(client, raw, "product-launch", "A reusable beeswax food wrap")
    location = response.headers["Location"]
    run_id = response.get_json()["run_id"]
    until(lambda: client.get(location, headers=auth(raw)).get_json()["status"] == "running")
    canceled = client.post(f"/v1/workflows/run/{run_id}/cancel", headers=auth(raw))
    assert canceled.status_code == 200
    record = canceled.get_json()
    assert record["status"] == "canceled" and record["finished_at"]
    assert {s["status"] for s in record["steps"]} == {"canceled"}
    assert calls_today(client, raw) == 0
    time.sleep(1.3)  # the running step's provider call ends: its result is discarded
    after = client.get(location, headers=auth(raw)).get_json()
    assert after["status"] == "canceled" and after["output"] is None
    assert {s["status"] for s in after["steps"]} == {"canceled"}
    assert after["credits"] == 0 and calls_today(client, raw) == 0
    assert len(fake_provider.calls("/v1/chat/completions")) == chats + 1
    again = client.post(f"/v1/workflows/run/{run_id}/cancel", headers=auth(raw))
    assert again.status_code == 409 and again.get_json()["code"] == "run_not_cancelable"
    assert sent == []  # a canceled run announces nothing


# --- requests refused, sandbox, idempotency, other accounts ------------------------------


@pytest.mark.parametrize(
    ("body", "status", "code", "field"),
    [
        ({"input": "x"}, 422, "validation_failed", "workflow_id"),
        ({"workflow_id": 3, "input": "x"}, 422, "validation_failed", "workflow_id"),
        ({"workflow_id": "no-such-workflow", "input": "x"}, 404, "workflow_not_found", None),
        ({"workflow_id": "code-to-docs"}, 422, "validation_failed", "input"),
        ({"workflow_id": "code-to-docs", "input": 5}, 422, "validation_failed", "input"),
        ({"workflow_id": "code-to-docs", "input": "x" * 12001}, 422, "validation_failed", "input"),
        ({"workflow_id": "code-to-docs", "input": "x", "tone": "a"}, 422, "validation_failed",
         "tone"),
        ({"workflow_id": "podcast-repurposer", "input": "not a file"}, 422, "validation_failed",
         "input"),
    ],
)  # fmt: skip
def test_bad_requests_are_refused_before_anything_runs(client, make_key, body, status, code, field):
    raw, _ = make_key("pro")
    response = client.post(START, headers=auth(raw), json=body)
    assert response.status_code == status, response.get_json()
    assert response.mimetype == "application/problem+json"
    problem = response.get_json()
    assert problem["code"] == code
    if field:
        assert field in problem["errors"]
    assert calls_today(client, raw) == 0


def test_the_catalogue_lists_workflows_and_one_by_id(client):
    listing = client.get("/v1/workflows").get_json()
    assert listing["count"] == len(WORKFLOWS) == len(listing["workflows"])
    assert sorted(w["id"] for w in listing["workflows"]) == WORKFLOWS
    one = client.get("/v1/workflows/content-creator").get_json()
    assert one["input_schema"]["maxLength"] == 300 and one["required_plan"] == "creator"
    assert client.get("/v1/workflows/nope").get_json()["code"] == "workflow_not_found"


def test_a_sandbox_key_gets_sample_outputs_without_quota_credits_or_provider(
    client, make_key, fake_provider
):
    raw, _ = make_key("agency", sandbox=True)
    chats = len(fake_provider.requests)
    response = start(client, raw, "content-creator", "Composting at home")
    record = until_ended(client, raw, response.headers["Location"])
    assert record["status"] == "succeeded" and record["sandbox"] is True
    assert record["credits"] == 0 and len(fake_provider.requests) == chats
    assert (
        record["output"]["blog_post"]
        == load_catalogue().get("blog-post-writer").sample_output()["text"]
    )


def test_an_idempotent_start_is_replayed(client, make_key, wf_app):
    raw, _ = make_key("pro")
    headers = {"Idempotency-Key": "start-1"}
    first = start(client, raw, "code-to-docs", "x = 1", **headers)
    again = start(client, raw, "code-to-docs", "x = 1", **headers)
    assert first.status_code == again.status_code == 202
    assert again.get_json() == first.get_json() and again.headers["Idempotent-Replayed"] == "true"
    assert calls_today(client, raw) == 4
    until_ended(client, raw, first.headers["Location"])


@pytest.mark.parametrize("action", ["status", "cancel"])
def test_another_accounts_workflow_run_is_404(client, make_key, action):
    owner, _ = make_key("pro")
    stranger, _ = make_key("pro")
    response = start(client, owner, "code-to-docs", "x = 1")
    run_id = response.get_json()["run_id"]
    method = client.get if action == "status" else client.post
    refused = method(f"/v1/workflows/run/{run_id}/{action}", headers=auth(stranger))
    assert refused.status_code == 404 and refused.get_json()["code"] == "run_not_found"
    unknown = method(
        f"/v1/workflows/run/00000000-0000-4000-8000-000000000000/{action}", headers=auth(owner)
    )
    assert unknown.status_code == 404
    until_ended(client, owner, response.headers["Location"])
