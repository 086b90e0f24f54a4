"""newman (from npm, installed by `make setup`) runs the Postman collection, as served by a real
deployment (gunicorn, an RQ worker, PostgreSQL, Redis), with a Pro key: every check of every
request passes, and every request checks something. And the generated checks fail on answers
that differ from the document."""

import json
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from blueprints.api.openapi.postman import LiveRun, openapi_to_postman
from tests.helpers import IN_CI, ROOT, needs_pg, needs_redis

NEWMAN = ROOT / "node_modules" / ".bin" / "newman"


@pytest.fixture
def newman():
    """newman's path; in CI a missing Node or newman fails the test instead of skipping it."""
    missing = None
    if shutil.which("node") is None:
        missing = "Node is not installed"
    elif not NEWMAN.exists():
        missing = f"{NEWMAN.relative_to(ROOT)} is missing: run `make setup` (npm ci)"
    if missing is not None:
        if IN_CI:
            pytest.fail(f"{missing}; CI runs the Postman collection with newman.")
        pytest.skip(missing)
    return NEWMAN


@pytest.fixture
def deployment(provider_in_env, monkeypatch, request):
    """The base URL of gunicorn and an RQ worker whose model provider is the fake
    OpenAI-compatible server on loopback (``provider_in_env``: model-backed tools answer in
    milliseconds, as with a real provider) and whose webhooks may target loopback (the
    test's receiver)."""
    monkeypatch.setenv("AI_API_KEY", "test")
    monkeypatch.setenv("FETCH_ALLOW_PRIVATE", "true")
    # The deployment's own RUN_RECORD_DELAY (50 ms): a status request right after an
    # inline run finds it before its batch is written (services/recorder.py, pending).
    base = request.getfixturevalue("live_server")
    request.getfixturevalue("rq_worker")
    return base


def run_newman(newman, collection_file, report_file, *env_vars: str):
    """newman's run of the collection: its JSON report's `run`, and its console output."""
    command = [str(newman), "run", str(collection_file)]
    for env_var in env_vars:
        command += ["--env-var", env_var]
    command += ["--reporters", "cli,json", "--reporter-json-export", str(report_file)]
    done = subprocess.run(
        [*command, "--timeout-request", "60000"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return json.loads(report_file.read_text())["run"], done


@needs_pg
@needs_redis
def test_newman_runs_the_collection_with_a_pro_key(
    newman, deployment, make_key, receiver, tmp_path
):
    response = requests.get(deployment + "/v1/openapi/postman", timeout=30)
    assert response.status_code == 200
    collection = response.json()
    collection_file = tmp_path / "collection.json"
    collection_file.write_text(response.text)
    report_file = tmp_path / "report.json"

    report, run = run_newman(
        newman,
        collection_file,
        report_file,
        f"api_key={make_key('pro')}",
        f"baseUrl={deployment}/v1",
        f"webhook_url={receiver.url}",
    )
    stats = report["stats"]
    failures = [
        f"{failure['source']['name']}: {failure['error']['message']}"
        for failure in report["failures"]
    ]
    assert failures == [], run.stdout[-5000:]
    assert run.returncode == 0, run.stdout[-5000:]

    requests_sent = [item for folder in collection["item"] for item in folder.get("item", [folder])]
    assert stats["requests"]["total"] == len(requests_sent)
    assert stats["assertions"]["failed"] == 0
    unchecked = [
        execution["item"]["name"]
        for execution in report["executions"]
        if not execution.get("assertions")
    ]
    assert unchecked == []


# --- the checks fail when an answer is not what the document says ---------------------------

PROBLEM = {"$ref": "#/components/schemas/Problem"}
STUB_SPEC = {
    "openapi": "3.1.0",
    "info": {"title": "Stub", "version": "1"},
    "paths": {
        "/v1/whoami": {
            "get": {
                "operationId": "whoami",
                "responses": {"200": {"description": "OK", "content": {"application/json": {}}}},
            }
        },
        "/v1/runs": {
            "post": {
                "operationId": "startRun",
                "requestBody": {"content": {"application/json": {"example": {"input": "x"}}}},
                "responses": {
                    "202": {
                        "description": "Started",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Run"}}
                        },
                        "links": {
                            "status": {
                                "operationId": "getRun",
                                "parameters": {"run_id": "$response.body#/id"},
                            }
                        },
                    },
                    "402": {
                        "description": "Buy a plan [plan_required].",
                        "content": {"application/problem+json": {"schema": PROBLEM}},
                    },
                },
            }
        },
        "/v1/runs/{run_id}": {
            "get": {
                "operationId": "getRun",
                "parameters": [
                    {"in": "path", "name": "run_id", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {
                    "200": {
                        "description": "OK",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Run"}}
                        },
                    },
                    "404": {
                        "description": "No run [run_not_found].",
                        "content": {"application/problem+json": {"schema": PROBLEM}},
                    },
                },
            }
        },
    },
    "components": {
        "schemas": {
            "Run": {"type": "object", "required": ["id", "status"]},
            "Problem": {"type": "object", "required": ["code", "status"]},
        }
    },
}
RUN = {"id": "run-1", "status": "queued"}
PLAN_REFUSAL = {
    "code": "plan_required",
    "status": 402,
    "required_plan": "creator",
    "upgrade_url": "/",
}
GOOD = {
    ("GET", "/v1/whoami"): (200, "application/json", {"plan": {"name": "pro"}}),
    ("POST", "/v1/runs"): (202, "application/json", RUN),
    ("GET", "/v1/runs/run-1"): (200, "application/json", RUN),
}


class _Stub(BaseHTTPRequestHandler):
    answers: dict = {}

    def _answer(self):
        if self.command == "POST":
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, media, body = self.answers.get(
            (self.command, self.path),
            (404, "application/problem+json", {"code": "run_not_found", "status": 404}),
        )
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", media)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass


# A start that gives no id leaves its status request on a placeholder: "status is 200" fails too.
@pytest.mark.parametrize(
    ("changed", "failing"),
    [
        ({}, []),
        (
            {("POST", "/v1/runs"): (500, "application/json", RUN)},
            ["status is 202 or 402", "status is 200"],
        ),
        (
            {("POST", "/v1/runs"): (202, "application/json", {"id": "run-1"})},
            ["the answer has id, status"],
        ),
        ({("POST", "/v1/runs"): (202, "text/plain", RUN)}, ["Content-Type is application/json"]),
        (
            {
                ("POST", "/v1/runs"): (
                    402,
                    "application/problem+json",
                    {**PLAN_REFUSAL, "code": "x"},
                )
            },
            ["the answer has code, status", "status is 200"],
        ),
        (
            {
                ("POST", "/v1/runs"): (
                    402,
                    "application/problem+json",
                    {**PLAN_REFUSAL, "required_plan": "pro"},
                )
            },
            ["402 names a plan the key does not have, and where to buy it", "status is 200"],
        ),
        # The status request goes to the id the start answered: another id is a 404.
        (
            {("POST", "/v1/runs"): (202, "application/json", {**RUN, "id": "run-2"})},
            ["status is 200"],
        ),
    ],
    ids=["as documented", "status", "required key", "media type", "code", "plan", "carried id"],
)
def test_the_generated_checks_fail_on_undocumented_answers(newman, tmp_path, changed, failing):
    handler = type("Handler", (_Stub,), {"answers": {**GOOD, **changed}})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        live = LiveRun(captures={"whoami": {"plan": "/plan/name"}})
        collection_file = tmp_path / "collection.json"
        collection_file.write_text(json.dumps(openapi_to_postman(STUB_SPEC, base_url, live)))
        report, _ = run_newman(newman, collection_file, tmp_path / "report.json")
    finally:
        server.shutdown()
        server.server_close()

    assert [failure["error"]["test"] for failure in report["failures"]] == failing
    assert report["stats"]["requests"]["total"] == 3
