"""Every row of the refusal table (docs/architecture/request-pipeline.md), with real tools."""

import io

import pytest

from engines import ProviderUnavailable
from extensions import db
from tests.helpers import auth

TOOL = "word-counter"
SLUG_RUN = f"/v1/public/tools/{TOOL}/run"
DISPATCH = "/v1/tools/run"
TEXT = "Flask is a small web framework. It is easy to learn."


def assert_problem(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/problem+json"
    body = response.get_json()
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"].endswith(code.replace("_", "-"))
    assert body["title"] and body["detail"]
    assert body["request_id"] == response.headers["X-Request-Id"]
    return body


@pytest.mark.parametrize("path", [SLUG_RUN, DISPATCH, "/v1/public/whoami"])
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-SVC-API-Key": ""},
        {"X-SVC-API-Key": "not-a-key"},
        {"X-SVC-API-Key": "svc_" + "A" * 40},
        {"Authorization": "Bearer svc_" + "B" * 40},
        {"Authorization": "Basic dXNlcjpwYXNz"},
    ],
    ids=["missing", "empty", "malformed", "unknown", "unknown-bearer", "wrong-scheme"],
)
def test_bad_key_is_401(client, path, headers):
    method = client.get if path.endswith("whoami") else client.post
    response = method(path, headers=headers, json={"slug": TOOL, "input": TEXT})
    assert_problem(response, 401, "invalid_api_key")
    assert "WWW-Authenticate" in response.headers


def test_revoked_key_is_401(client, make_key, runner):
    raw = make_key("pro")
    assert client.get("/v1/public/whoami", headers=auth(raw)).status_code == 200
    from extensions import db
    from models import ApiKey
    from services.keys import hash_key

    key = db.session.scalar(db.select(ApiKey).where(ApiKey.key_hash == hash_key(raw)))
    result = runner.invoke(args=["keys", "revoke", key.id])
    assert result.exit_code == 0, result.output
    assert_problem(client.get("/v1/public/whoami", headers=auth(raw)), 401, "invalid_api_key")


@pytest.mark.parametrize("plan", ["free", "starter"])
def test_free_and_starter_get_402_on_slug_endpoint(client, make_key, plan):
    raw = make_key(plan)
    body = assert_problem(
        client.post(SLUG_RUN, headers=auth(raw), json={"input": TEXT}), 402, "plan_required"
    )
    assert body["required_plan"] == "pro"
    assert body["upgrade_url"] == "https://svc.test/pricing?plan=pro"


@pytest.mark.parametrize("plan", ["free", "starter"])
def test_free_and_starter_get_403_on_dispatcher(client, make_key, plan):
    raw = make_key(plan)
    body = assert_problem(
        client.post(DISPATCH, headers=auth(raw), json={"slug": TOOL, "input": TEXT}),
        403,
        "plan_required",
    )
    assert body["required_plan"] == "pro"
    assert body["upgrade_url"] == "https://svc.test/pricing?plan=pro"


@pytest.mark.parametrize("plan", ["free", "starter"])
def test_free_keys_may_call_whoami(client, make_key, plan):
    response = client.get("/v1/public/whoami", headers=auth(make_key(plan)))
    assert response.status_code == 200
    assert response.get_json()["plan"] == {
        "name": plan,
        "api_access": False,
        "daily_quota": 0,
        "per_minute": 30,
        "categories": [],
    }


@pytest.mark.parametrize(
    "path, body",
    [
        ("/v1/public/tools/no-such-tool/run", {"input": TEXT}),
        (DISPATCH, {"slug": "no-such-tool", "input": TEXT}),
    ],
)
def test_unknown_slug_is_404(client, make_key, path, body):
    body = assert_problem(
        client.post(path, headers=auth(make_key()), json=body), 404, "tool_not_found"
    )
    assert "no-such-tool" in body["detail"]


@pytest.mark.parametrize("path", [SLUG_RUN, DISPATCH])
@pytest.mark.parametrize("data", ['{"input": ', "not json", '{"input": "x",}'])
def test_unparseable_json_is_400(client, make_key, path, data):
    response = client.post(
        path, headers=auth(make_key()), data=data, content_type="application/json"
    )
    assert_problem(response, 400, "invalid_json")


@pytest.mark.parametrize(
    "path, body, field",
    [
        (DISPATCH, {"input": TEXT}, "slug"),
        (DISPATCH, {"slug": 42, "input": TEXT}, "slug"),
        (DISPATCH, {"slug": TOOL}, "text"),
        (DISPATCH, {"slug": TOOL, "input": 12}, "text"),
        (DISPATCH, {"slug": TOOL, "input": TEXT, "colour": "red"}, "colour"),
        (DISPATCH, {"slug": TOOL, "input": TEXT, "text": TEXT}, "input"),
        (SLUG_RUN, {}, "text"),
        (SLUG_RUN, {"input": ["a list"]}, "text"),
        (SLUG_RUN, {"input": TEXT, "unknown": 1}, "unknown"),
        (SLUG_RUN, [1, 2, 3], ""),
    ],
    ids=[
        "no-slug",
        "slug-not-string",
        "no-input",
        "input-wrong-type",
        "unknown-field",
        "input-and-primary",
        "slug-endpoint-empty",
        "slug-endpoint-wrong-type",
        "slug-endpoint-unknown-field",
        "not-an-object",
    ],
)
def test_invalid_input_is_422_with_field_errors(client, make_key, path, body, field):
    problem = assert_problem(
        client.post(path, headers=auth(make_key()), json=body), 422, "validation_failed"
    )
    assert field in problem["errors"]
    assert all(isinstance(message, str) for message in problem["errors"][field])


@pytest.mark.parametrize("path", [SLUG_RUN, DISPATCH])
def test_body_over_25_mib_is_413_even_before_the_key(client, path):
    big = '{"input": "' + "a" * (25 * 1024 * 1024 + 10) + '"}'
    response = client.post(path, data=big, content_type="application/json")
    assert_problem(response, 413, "payload_too_large")


@pytest.mark.parametrize("path", [SLUG_RUN, DISPATCH])
def test_body_over_one_mib_for_a_text_tool_is_413(client, make_key, path):
    big = '{"slug": "word-counter", "input": "' + "a" * (1024 * 1024 + 10) + '"}'
    response = client.post(
        path, headers=auth(make_key()), data=big, content_type="application/json"
    )
    body = assert_problem(response, 413, "payload_too_large")
    assert "1 MiB" in body["detail"]


class CountedStream(io.BytesIO):
    """A request body sent chunked (no Content-Length), counting the bytes the app reads."""

    def __init__(self, data: bytes):
        super().__init__(data)
        self.taken = 0

    def read(self, size=-1):
        data = super().read(size)
        self.taken += len(data)
        return data

    def readline(self, size=-1):
        data = super().readline(size)
        self.taken += len(data)
        return data


def _chunked(client, path, data: bytes, headers=None):
    stream = CountedStream(data)
    response = client.post(
        path,
        input_stream=stream,
        headers={**(headers or {}), "Transfer-Encoding": "chunked"},
        content_type="application/json",
        # As the servers say of a chunked body: its end is the stream's end.
        environ_overrides={"wsgi.input_terminated": True},
    )
    return response, stream


@pytest.mark.parametrize("path", [SLUG_RUN, DISPATCH])
def test_a_chunked_body_over_one_mib_for_a_text_tool_is_413(client, make_key, path):
    """Bounded as a body of declared length is (5 MiB of chunked JSON was parsed, then
    refused as 422 on a field's length): 413, the tool's limit named."""
    big = b'{"slug": "word-counter", "input": "' + b"a" * (5 * 1024 * 1024) + b'"}'
    response, _ = _chunked(client, path, big, auth(make_key()))
    body = assert_problem(response, 413, "payload_too_large")
    assert "1 MiB" in body["detail"]


def test_a_chunked_body_is_read_no_further_than_the_limit(client):
    limit = 1024 * 1024
    cancel = "/v1/tools/run/00000000-0000-4000-8000-000000000000/cancel"
    response, stream = _chunked(client, cancel, b"a" * (5 * limit))
    assert_problem(response, 413, "payload_too_large")
    assert stream.taken <= limit + 64 * 1024, stream.taken


def test_a_chunked_body_within_the_limit_is_run(client, make_key):
    body = b'{"slug": "word-counter", "input": "one two three"}'
    response, _ = _chunked(client, DISPATCH, body, auth(make_key()))
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["output"]["words"] == 3


def test_other_endpoints_refuse_bodies_over_one_mib_before_the_key(client):
    big = "a" * (1024 * 1024 + 10)
    response = client.post(
        "/v1/tools/run/00000000-0000-4000-8000-000000000000/cancel",
        data=big,
        content_type="application/json",
    )
    assert_problem(response, 413, "payload_too_large")


def test_non_json_content_type_is_415(client, make_key):
    response = client.post(
        SLUG_RUN, headers=auth(make_key()), data="input=hello", content_type="text/plain"
    )
    assert_problem(response, 415, "unsupported_media_type")


def test_per_minute_limit_is_429_rate_limited(client, make_key):
    raw = make_key("pro", per_minute_override=3)
    for _ in range(3):
        assert client.get("/v1/public/whoami", headers=auth(raw)).status_code == 200
    response = client.get("/v1/public/whoami", headers=auth(raw))
    body = assert_problem(response, 429, "rate_limited")
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    assert body["limit"] == 3 and body["remaining"] == 0


def test_daily_quota_is_429_quota_exceeded(client, make_key):
    raw = make_key("pro", daily_override=2)
    for _ in range(2):
        response = client.post(SLUG_RUN, headers=auth(raw), json={"input": TEXT})
        assert response.status_code == 200
    response = client.post(SLUG_RUN, headers=auth(raw), json={"input": TEXT})
    body = assert_problem(response, 429, "quota_exceeded")
    assert 1 <= int(response.headers["Retry-After"]) <= 86400
    assert body["limit"] == 2 and body["remaining"] == 0
    assert body["resets_at"].endswith("T00:00:00Z")


def test_provider_unavailable_is_503_and_releases_quota(client, make_key, monkeypatch):
    import engines

    def unreachable(tool, inputs):
        raise ProviderUnavailable("The model provider did not answer.", retry_after=17)

    monkeypatch.setattr("services.runs.run_tool", unreachable)
    raw = make_key("pro", daily_override=1)
    response = client.post(SLUG_RUN, headers=auth(raw), json={"input": TEXT})
    body = assert_problem(response, 503, "provider_unavailable")
    assert response.headers["Retry-After"] == "17"
    assert body["run_id"]
    monkeypatch.setattr("services.runs.run_tool", engines.run_tool)
    # The failed run gave its reservation back: the one call of the day is still there.
    assert client.post(SLUG_RUN, headers=auth(raw), json={"input": TEXT}).status_code == 200


@pytest.mark.parametrize("status_path", ["/v1/public/whoami"])
def test_refusals_before_the_run_do_not_consume_quota(client, make_key, status_path, app):
    raw = make_key("pro", daily_override=1)
    for body in ({"input": 12}, {"input": TEXT, "nope": 1}):
        assert client.post(SLUG_RUN, headers=auth(raw), json=body).status_code == 422
    assert (
        client.post(
            "/v1/public/tools/nope/run", headers=auth(raw), json={"input": TEXT}
        ).status_code
        == 404
    )
    assert client.post(SLUG_RUN, json={"input": TEXT}).status_code == 401
    assert (
        client.post(
            SLUG_RUN, headers=auth(raw), data="{", content_type="application/json"
        ).status_code
        == 400
    )
    usage = client.get(status_path, headers=auth(raw)).get_json()["usage"]
    assert usage["calls_today"] == 0
    assert client.post(SLUG_RUN, headers=auth(raw), json={"input": TEXT}).status_code == 200


# --- a tool this deployment cannot run -----------------------------------------------------

UNAVAILABLE = "alt-text-writer"  # image understanding: needs AI_BASE_URL, unset here
IMAGE = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGA"
    "WjR9awAAAABJRU5ErkJggg=="
)


@pytest.mark.parametrize(
    "path, body",
    [
        (f"/v1/public/tools/{UNAVAILABLE}/run", {"input": IMAGE}),
        (DISPATCH, {"slug": UNAVAILABLE, "input": IMAGE}),
    ],
    ids=["slug", "dispatcher"],
)
@pytest.mark.parametrize("prefer", ["", "respond-async", "wait=5"])
def test_a_tool_that_cannot_run_here_is_503_before_quota_queue_or_storage(
    client, make_key, path, body, prefer
):
    from models import Run, StoredFile

    raw = make_key("pro")
    headers = {**auth(raw), **({"Prefer": prefer} if prefer else {})}
    response = client.post(path, headers=headers, json=body)
    problem = assert_problem(response, 503, "provider_unavailable")
    assert "AI_BASE_URL" in problem["detail"]
    assert int(response.headers["Retry-After"]) > 0
    assert "run_id" not in problem
    who = client.get("/v1/public/whoami", headers=auth(raw)).get_json()
    assert who["usage"]["calls_today"] == 0
    assert db.session.scalar(db.select(db.func.count(Run.id))) == 0  # nothing queued
    assert db.session.scalar(db.select(db.func.count(StoredFile.id))) == 0


def test_invalid_input_to_a_tool_that_cannot_run_here_is_still_422(client, make_key):
    response = client.post(DISPATCH, headers=auth(make_key("pro")), json={"slug": UNAVAILABLE})
    assert_problem(response, 422, "validation_failed")


def test_the_catalogue_says_so_before_anyone_runs_it(client):
    tool = client.get(f"/v1/tools/{UNAVAILABLE}").get_json()
    assert tool["available"] is False and "AI_BASE_URL" in tool["unavailable_reason"]


@pytest.mark.parametrize("prefer", ["", "respond-async"])
def test_a_sandbox_run_of_a_queued_tool_is_its_sample_answered_inline(
    client, make_key, monkeypatch, prefer
):
    """Even of a tool that cannot run here: a sample needs no provider, and no queue."""
    from catalogue import load_catalogue

    def no_queue(*args, **kwargs):
        raise AssertionError("a sandbox run was queued")

    monkeypatch.setattr("jobs.launch.enqueue_run", no_queue)
    raw = make_key("pro", sandbox=True)
    headers = {**auth(raw), **({"Prefer": prefer} if prefer else {})}
    for slug in ("text-to-speech", UNAVAILABLE):
        tool = load_catalogue().get(slug)
        assert tool.queue
        response = client.post(DISPATCH, headers=headers, json={"slug": slug, "input": IMAGE})
        assert response.status_code == 200, response.get_json()
        result = response.get_json()
        assert (result["status"], result["sandbox"], result["credits"]) == ("succeeded", True, 0)
        assert result["output"] == tool.sample_output()


def test_a_workflow_with_a_step_that_cannot_run_here_is_503_before_it_starts(client, make_key):
    from models import WorkflowRun

    raw = make_key("creator")
    response = client.post(
        "/v1/workflows/run",
        headers=auth(raw),
        json={"workflow_id": "content-creator", "input": "Composting at home"},
    )
    problem = assert_problem(response, 503, "provider_unavailable")
    assert "blog-header-illustration" in problem["detail"] and "AI_BASE_URL" in problem["detail"]
    assert db.session.scalar(db.select(db.func.count(WorkflowRun.id))) == 0
    who = client.get("/v1/public/whoami", headers=auth(raw)).get_json()
    assert who["usage"]["calls_today"] == 0
