"""A workflow on real RQ worker processes, PostgreSQL and Redis (the production shape)."""

import time

import pytest

from tests.helpers import auth, deployment_env, needs_pg, needs_redis, start_worker, stop_worker

REVIEWS = "Love the app, but calendar sync fails every few days.\nSupport was quick and kind."


@pytest.fixture
def second_worker(provider_in_env, rq_worker, tmp_path):
    """One more worker process: steps of one run spread over several workers."""
    log_path = tmp_path / "second_worker.log"
    process = start_worker(deployment_env(), log_path)
    yield process
    stop_worker(process, log_path)


@needs_pg
@needs_redis
def test_a_workflow_runs_to_its_end_on_rq_workers(provider_in_env, client, make_key, second_worker):
    raw = make_key("pro")
    response = client.post(
        "/v1/workflows/run",
        headers=auth(raw),
        json={"workflow_id": "review-insights", "input": REVIEWS},
    )
    assert response.status_code == 202
    location = response.headers["Location"]
    deadline = time.monotonic() + 120  # worker processes start slowly on a busy machine
    while (record := client.get(location, headers=auth(raw)).get_json())["status"] not in {
        "succeeded",
        "failed",
        "canceled",
    }:
        assert time.monotonic() < deadline, record
        time.sleep(0.5)
    assert record["status"] == "succeeded", record["error"]
    steps = {step["id"]: step for step in record["steps"]}
    assert {step["status"] for step in steps.values()} == {"succeeded"}
    assert steps["summary"]["started_at"] >= max(
        steps["sentiment"]["finished_at"], steps["themes"]["finished_at"]
    )
    assert steps["summary"]["output"]["text"].startswith("Deterministic answer")
    assert set(record["output"]) == {
        "sentiment",
        "sentiment_score",
        "themes",
        "recommendations",
        "executive_summary",
    }
    assert len(provider_in_env.calls("/v1/chat/completions")) == 2
    who = client.get("/v1/public/whoami", headers=auth(raw)).get_json()
    assert who["usage"]["calls_today"] == 3
    # The steps' events were written by the workers, to Redis: replayed whole.
    events = client.get(location.replace("/status", "/events"), headers=auth(raw))
    kinds = [
        line.split(": ", 1)[1]
        for line in events.get_data(as_text=True).splitlines()
        if line.startswith("event: ")
    ]
    assert kinds.count("step_started") == kinds.count("step_ended") == 3
    assert "delta" in kinds and kinds[-1] == "done"
