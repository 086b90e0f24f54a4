"""POST /v1/mcp, through the official MCP SDK's client (a client no one here wrote), against
the test app served over real HTTP (werkzeug's threaded server in this process, so that a
test reads the database the app writes)."""

from __future__ import annotations

import asyncio
import threading

import httpx2
import pytest
import requests
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from sqlalchemy import select
from werkzeug.serving import make_server

from extensions import db
from models import Run, UsageDaily, UsageEvent
from services import clock, keys, quota
from services.recorder import recorder
from tests.helpers import auth, needs_pg, needs_redis

pytestmark = pytest.mark.anyio

TEXT = "The quick brown fox jumps over the lazy dog. It was not amused."


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def server(app):
    """The app on a real HTTP server (threads, as the SDK's client needs one); its MCP URL."""
    http = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{http.server_port}/v1/mcp"
    http.shutdown()
    thread.join(5)


def connect(url: str, raw: str | None, **client_options) -> tuple[httpx2.AsyncClient, Client]:
    headers = {"X-SVC-API-Key": raw} if raw else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120))
    client = Client(streamable_http_client(url, http_client=http), **client_options)
    return http, client


async def call(url: str, raw: str, name: str, arguments: dict, **options):
    http, client = connect(url, raw)
    async with http, client:
        return await client.call_tool(name, arguments, **options)


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def calls_today(raw: str) -> int:
    return quota.store().usage(keys.resolve(raw).key_id, clock.now()).calls


# --- the protocol -------------------------------------------------------------------------


async def test_an_agent_connects_and_lists_a_few_tools_that_reach_the_catalogue(server, make_key):
    http, client = connect(server, make_key("pro"))
    async with http, client:
        assert client.protocol_version in ("2025-06-18", "2025-11-25")
        assert client.server_capabilities.tools is not None
        listed = (await client.list_tools()).tools
    names = [tool.name for tool in listed]
    assert names == ["search_tools", "describe_tool", "run_tool", "get_run", "run_workflow"]
    for tool in listed:
        assert tool.input_schema["type"] == "object" and tool.description


async def test_the_2025_06_18_revision_is_spoken_too(server, make_key):
    http, client = connect(server, make_key("pro"), mode="legacy")
    async with http, client:
        assert client.protocol_version in ("2025-06-18", "2025-11-25")
    answer = requests.post(
        server,
        headers={**auth(make_key("pro")), "Accept": "application/json, text/event-stream"},
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        timeout=10,
    ).json()
    assert answer["result"]["protocolVersion"] == "2025-06-18"


async def test_no_key_is_401_with_a_challenge_and_the_client_fails_cleanly(server, make_key):
    answer = requests.post(
        server, json={"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, timeout=10
    )
    assert answer.status_code == 401
    assert "Bearer" in answer.headers["WWW-Authenticate"]
    assert answer.json()["id"] == 7 and answer.json()["error"]["code"] == -32011
    for raw in (None, "svc_" + "x" * 40):
        http, client = connect(server, raw)
        with pytest.raises(BaseException) as failed:  # noqa: PT011 - the SDK's ExceptionGroup
            async with http, client:
                pass
        assert "API key" in mcp_error(failed.value).error.message


def test_the_transport_refuses_what_a_stateless_server_cannot_do(app, server, make_key):
    headers = {**auth(make_key("pro")), "Accept": "application/json, text/event-stream"}
    assert requests.get(server, headers=headers, timeout=10).status_code == 405
    deleted = requests.delete(server, headers=headers, timeout=10)
    assert deleted.status_code == 405 and deleted.headers["Allow"] == "POST"
    bad = requests.post(
        server, headers={**headers, "Content-Type": "application/json"}, data=b"{", timeout=10
    )
    assert bad.status_code == 400 and bad.json()["error"]["code"] == -32700
    batch = requests.post(server, headers=headers, json=[{"jsonrpc": "2.0"}], timeout=10)
    assert batch.status_code == 400 and batch.json()["error"]["code"] == -32600
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    newer = requests.post(
        server, headers={**headers, "MCP-Protocol-Version": "2099-01-01"}, json=ping, timeout=10
    )
    assert newer.status_code == 400 and "2025-06-18" in newer.json()["error"]["message"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert requests.post(server, headers=headers, json=note, timeout=10).status_code == 202
    other = requests.post(
        server, headers=headers, json={**ping, "method": "resources/list"}, timeout=10
    )
    assert other.status_code == 200 and other.json()["error"]["code"] == -32601
    foreign = requests.post(
        server, headers={**headers, "Origin": "https://evil.example"}, json=ping, timeout=10
    )
    assert foreign.status_code == 403
    assert requests.post(server, headers=headers, json=ping, timeout=10).json()["result"] == {}


# --- the default tools --------------------------------------------------------------------


async def test_search_finds_tools_and_says_whether_the_key_can_run_them(server, make_key):
    found = await call(server, make_key("pro"), "search_tools", {"query": "count the words"})
    assert not found.is_error
    results = found.structured_content["results"]
    counter = next(item for item in results if item["slug"] == "word-counter")
    assert counter["kind"] == "tool" and counter["credits"] == 1 and counter["can_run"]
    free = await call(server, make_key("free"), "search_tools", {"query": "count the words"})
    assert not any(item["can_run"] for item in free.structured_content["results"])
    flows = await call(server, make_key("pro"), "search_tools", {"query": "launch a product"})
    assert any(item["kind"] == "workflow" for item in flows.structured_content["results"])


async def test_describe_gives_the_schemas_and_an_example(server, make_key):
    described = await call(server, make_key("pro"), "describe_tool", {"slug": "word-counter"})
    body = described.structured_content
    assert body["input_schema"]["required"] == ["text"] and body["examples"][0]["output"]
    missing = await call(server, make_key("pro"), "describe_tool", {"slug": "no-such-tool"})
    assert missing.is_error and text_of(missing).startswith("tool_not_found (404)")


async def test_run_tool_answers_the_output_counted_once_as_an_mcp_run(app, server, make_key):
    raw = make_key("pro")
    result = await call(server, raw, "run_tool", {"slug": "word-counter", "input": {"text": TEXT}})
    assert not result.is_error
    assert result.structured_content["words"] == 13
    assert '"words":13' in text_of(result)
    run_id = result.meta["run_id"]
    assert calls_today(raw) == 1
    with app.app_context():
        recorder().flush()
        run = db.session.get(Run, run_id)
        assert (run.source, run.status, run.tool_slug) == ("mcp", "succeeded", "word-counter")
        ledger = db.session.scalars(select(UsageEvent).where(UsageEvent.run_id == run_id)).one()
        assert (ledger.source, ledger.credits) == ("mcp", run.credits)
        daily = db.session.scalars(select(UsageDaily)).all()
        assert [(row.source, row.calls) for row in daily] == [("mcp", 1)]
    again = await call(server, raw, "get_run", {"run_id": run_id})
    assert again.structured_content["status"] == "succeeded"
    assert again.structured_content["output"]["words"] == 13


async def test_a_sandbox_key_gets_the_tools_sample(server, make_key):
    result = await call(
        server,
        make_key("pro", sandbox=True),
        "run_tool",
        {"slug": "word-counter", "input": {"text": "a"}},
    )
    assert not result.is_error and result.meta["credits"] == 0


# --- refusals as results the agent can act on ---------------------------------------------


async def test_each_refusal_is_an_error_result_naming_its_code(server, make_key):
    free = await call(
        server, make_key("free"), "run_tool", {"slug": "word-counter", "input": {"text": "a"}}
    )
    assert free.is_error and text_of(free).startswith("plan_required (403)")
    assert "upgrade_url: http" in text_of(free)
    below = await call(
        server,
        make_key("pro"),
        "run_tool",
        {"slug": "avatar-generator", "input": {"description": "a cat"}},
    )
    assert below.is_error and text_of(below).startswith("plan_required (402)")
    invalid = await call(server, make_key("pro"), "run_tool", {"slug": "word-counter", "input": {}})
    assert invalid.is_error and "validation_failed (422)" in text_of(invalid)
    assert "- text: Missing required field." in text_of(invalid)
    unknown = await call(server, make_key("pro"), "run_tool", {"slug": "nope", "input": {}})
    assert unknown.is_error and text_of(unknown).startswith("tool_not_found (404)")
    raw = make_key("pro", daily_override=1)
    assert not (
        await call(server, raw, "run_tool", {"slug": "word-counter", "input": {"text": "a"}})
    ).is_error
    over = await call(server, raw, "run_tool", {"slug": "word-counter", "input": {"text": "a"}})
    assert over.is_error and text_of(over).startswith("quota_exceeded (429)")
    assert "resets_at: " in text_of(over)
    assert calls_today(raw) == 1


def mcp_error(raised: BaseException) -> MCPError:
    """The SDK's error in what it raised (out of its task group, an ExceptionGroup)."""
    while isinstance(raised, BaseExceptionGroup):
        raised = raised.exceptions[0]
    assert isinstance(raised, MCPError), raised
    return raised


async def test_a_call_of_a_tool_the_server_does_not_list_is_a_protocol_error(server, make_key):
    with pytest.raises(BaseException) as refused:  # noqa: PT011 - the SDK's ExceptionGroup
        await call(server, make_key("pro"), "word-counter", {"text": "a"})
    assert mcp_error(refused.value).error.code == -32602


async def test_only_tool_calls_spend_the_per_minute_limit(server, make_key):
    raw = make_key("pro", per_minute_override=3)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {**auth(raw), "Accept": "application/json, text/event-stream"}
    for _ in range(4):
        assert requests.post(server, headers=headers, json=ping, timeout=10).status_code == 200
    http, client = connect(server, raw)
    async with http, client:
        for _ in range(4):
            await client.list_tools()
        for _ in range(3):
            found = await client.call_tool("describe_tool", {"slug": "word-counter"})
            assert not found.is_error
        limited = await client.call_tool("describe_tool", {"slug": "word-counter"})
    assert limited.is_error and text_of(limited).startswith("rate_limited (429)")
    assert "retry_after: " in text_of(limited)


# --- selected tools -----------------------------------------------------------------------


async def test_selected_tools_are_listed_and_called_directly(app, server, make_key):
    raw = make_key("pro")
    http, client = connect(server + "?tools=word-counter,url-slug-generator,get_run", raw)
    async with http, client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert list(listed) == ["word-counter", "url-slug-generator", "get_run"]
        counter = app.extensions["catalogue"].get("word-counter")
        assert listed["word-counter"].input_schema == counter.inputs
        assert listed["word-counter"].output_schema == counter.output
        # The client checks the structured output against the tool's output schema.
        result = await client.call_tool("word-counter", {"text": TEXT})
        assert result.structured_content["words"] == 13
        with pytest.raises(MCPError) as refused:
            await client.call_tool("run_tool", {"slug": "word-counter", "input": {"text": "a"}})
        assert refused.value.error.code == -32602


async def test_a_keys_own_selection_applies_when_the_client_names_none(app, server, make_key):
    raw = make_key("pro", mcp_tools="word-counter")
    http, client = connect(server, raw)
    async with http, client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["word-counter"]
    http, client = connect(server + "?tools=url-slug-generator", raw)
    async with http, client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["url-slug-generator"]


def test_a_selection_naming_what_is_not_a_tool_is_refused(server, make_key):
    headers = {**auth(make_key("pro")), "Accept": "application/json, text/event-stream"}
    answer = requests.post(
        server + "?tools=word-counter,nope",
        headers=headers,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        timeout=10,
    )
    assert answer.status_code == 400 and "nope" in answer.json()["error"]["message"]


# --- load ---------------------------------------------------------------------------------


@needs_pg
@needs_redis
async def test_a_hundred_calls_at_once_are_each_one_run(server, make_key):
    raw = make_key("pro", per_minute_override=1000)
    http, client = connect(server, raw)
    async with http, client:
        results = await asyncio.gather(
            *(
                client.call_tool(
                    "run_tool", {"slug": "word-counter", "input": {"text": f"a{'b' * n} c"}}
                )
                for n in range(100)
            )
        )
    assert not any(result.is_error for result in results)
    assert {result.structured_content["words"] for result in results} == {2}
    assert len({result.meta["run_id"] for result in results}) == 100
    assert calls_today(raw) == 100


# --- queued runs --------------------------------------------------------------------------


@pytest.fixture
def queued_server(provider_in_env, server, rq_worker):
    """The MCP URL of an app whose model tools call the fake provider, with the Procfile's
    workers running its queued runs."""
    return server


@needs_pg
@needs_redis
async def test_a_queued_run_reports_progress_from_its_text_then_answers(
    queued_server, provider_in_env, make_key
):
    provider_in_env.stream_pieces, provider_in_env.stream_seconds = 12, 2.0
    raw = make_key("pro")
    seen = []

    async def progress(value, total, message):
        seen.append((value, message))

    result = await call(
        queued_server,
        raw,
        "run_tool",
        {"slug": "abstractive-summarizer", "input": {"text": TEXT * 20}},
        progress_callback=progress,
    )
    assert not result.is_error, text_of(result)
    assert result.structured_content and result.meta["status"] == "succeeded"
    assert seen[0] == (0, "The run is queued.")
    written = [value for value, _ in seen[1:]]
    assert len(written) >= 3 and written == sorted(set(written))  # each one further on
    assert calls_today(raw) == 1


@needs_pg
@needs_redis
async def test_a_file_comes_as_a_link_that_downloads(queued_server, make_key):
    result = await call(
        queued_server,
        make_key("creator"),
        "run_tool",
        {"slug": "avatar-generator", "input": {"description": "a red fox"}},
    )
    assert not result.is_error, text_of(result)
    links = [block for block in result.content if block.type == "resource_link"]
    assert links and links[0].mime_type == "image/png"
    # Built on PUBLIC_BASE_URL (the workers'), asked of this test's server.
    path = "/" + str(links[0].uri).split("/", 3)[3]
    downloaded = requests.get(queued_server.removesuffix("/v1/mcp") + path, timeout=10)
    assert downloaded.status_code == 200
    assert downloaded.content.startswith(b"\x89PNG") and len(downloaded.content) == links[0].size
    assert all(len(block.text) < 100_000 for block in result.content if block.type == "text")


@needs_pg
@needs_redis
async def test_a_run_past_the_wait_answers_its_id_and_goes_on(app, server, make_key):
    """No worker here: the run stays queued past the wait; its end will be announced."""
    app.config["MCP_WAIT_SECONDS"] = 0.5
    raw = make_key("pro")
    result = await call(
        server, raw, "run_tool", {"slug": "abstractive-summarizer", "input": {"text": TEXT}}
    )
    assert not result.is_error
    state = result.structured_content
    assert state["status"] == "queued" and "get_run" in text_of(result)
    read = await call(server, raw, "get_run", {"run_id": state["run_id"]})
    assert read.structured_content["status"] == "queued"
    with app.app_context():
        run = db.session.get(Run, state["run_id"])
        assert run.notify and run.source == "mcp"  # its end goes to the key's webhook
    selected = await call(
        server + "?tools=abstractive-summarizer", raw, "abstractive-summarizer", {"text": TEXT}
    )
    assert selected.is_error and "get_run" in text_of(selected)  # not its output's shape


@needs_pg
@needs_redis
async def test_a_workflow_started_by_an_agent_runs_its_steps_as_mcp_runs(
    app, provider_in_env, server, make_key
):
    """No worker here: the workflow stays queued past the wait, its steps recorded."""
    app.config["MCP_WAIT_SECONDS"] = 0.5
    raw = make_key("agency")
    result = await call(
        server, raw, "run_workflow", {"workflow_id": "product-launch", "input": "A bike lamp."}
    )
    assert not result.is_error, text_of(result)
    state = result.structured_content
    assert state["status"] == "queued" and "get_run" in text_of(result)
    read = await call(server, raw, "get_run", {"run_id": state["run_id"]})
    assert read.structured_content["workflow_id"] == "product-launch"
    with app.app_context():
        steps = db.session.scalars(select(Run).where(Run.workflow_run_id == state["run_id"]))
        assert {step.source for step in steps} == {"mcp"}
