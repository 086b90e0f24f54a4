"""``POST /v1/mcp``: the catalogue for AI agents, over the Model Context Protocol's
streamable HTTP transport (docs/api/mcp.md).

Stateless: every POST carries one message and is answered on its own, by any web process
(no session id, no stream to resume; ``GET`` and ``DELETE`` answer 405). A request is
authenticated by the same API keys as the REST API; ``initialize``, ``ping`` and
``tools/list`` cost nothing, each ``tools/call`` spends one request of the key's per-minute
limit, and one that runs a tool is one run, admitted, counted and recorded as the REST
API's (``calls``). A queued run is waited for up to ``MCP_WAIT_SECONDS``: as server-sent
events with ``notifications/progress`` when the client gave a progress token, else as one
JSON answer; past the wait, the result names the run for ``get_run`` and the run goes on
(its end is then announced by its webhook event, as a REST run nobody waits for).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

from flask import Blueprint, current_app, g, request, stream_with_context
from flask import Response as FlaskResponse

from blueprints.api import OUTAGES
from blueprints.api.events import follow_run
from blueprints.api.mcp import calls, protocol, toolset
from blueprints.api.mcp.protocol import Message, RpcError
from blueprints.api.pipeline import API_KEY_HEADER, authenticate, current_key, settle_limit
from blueprints.api.problems import Problem
from extensions import db
from jobs import launch
from models import Run, WorkflowRun
from services import urls
from services.run_events import STEP_ENDED, STEP_STARTED

log = logging.getLogger(__name__)

bp = Blueprint("mcp", __name__)

PATH = "/v1/mcp"
SERVER_INFO = {"name": "svc", "title": "SVC tools", "version": "1.0.0"}
INSTRUCTIONS = (
    "This server runs the tools and workflows of the SVC catalogue with your API key. Find a "
    "tool with search_tools, read its input fields with describe_tool, then run it with "
    "run_tool (a workflow: run_workflow). Every run costs its credits against the key's "
    "daily quota; search_tools says what each costs and whether this key's plan can run it. "
    "A run that is not over within the wait answers its run_id: read it later with get_run."
)
# The challenges of a 401: a bearer token, or the key in its own header (no OAuth metadata
# is named: clients that find some go looking for an authorization server).
CHALLENGES = f'Bearer realm="svc", ApiKey header="{API_KEY_HEADER}"'
# Progress notifications of a run's text: at most one per this many seconds.
PROGRESS_EVERY = 0.25
OUTAGE_RETRY_AFTER = 5


@bp.post(PATH)
def endpoint():
    try:
        message = _read()
        if message.method != "tools/call":
            g.limit_pending = False  # free: only a tool call spends a per-minute request
        if not message.is_request:
            return FlaskResponse(status=202)  # a notification (initialized, cancelled)
        return _answer(message)
    except RpcError as error:
        return protocol.error_response(_request_id(), error)


@bp.route(PATH, methods=["GET", "DELETE"])
def no_stream():
    """A stateless server opens no stream for the client (``GET``) and has no session to end
    (``DELETE``)."""
    error = RpcError(
        protocol.INVALID_REQUEST,
        "This MCP server is stateless: POST each message to this URL; there is no stream to "
        "open and no session to end.",
        status=405,
        headers={"Allow": "POST"},
    )
    return protocol.error_response(None, error)


def _request_id():
    """The id of the request being answered, when it could be read (for its error)."""
    message = request.environ.get("svc.mcp.message")
    return message.id if message is not None else None


def _read() -> Message:
    """The POST's message, after the transport's checks: its origin, content type and
    protocol version, then the key (401)."""
    origin = request.headers.get("Origin")
    if origin is not None and not _allowed_origin(origin):
        raise RpcError(protocol.FORBIDDEN, f"Requests from {origin} are not allowed.", status=403)
    if request.mimetype != "application/json":
        raise RpcError(
            protocol.INVALID_REQUEST, "Send the message as application/json.", status=415
        )
    accept = request.accept_mimetypes
    if request.headers.get("Accept") and accept.find("application/json") < 0:
        raise RpcError(
            protocol.INVALID_REQUEST,
            "Accept application/json (and text/event-stream, for progress).",
            status=406,
        )
    message = protocol.parse(request.get_data(cache=False))
    request.environ["svc.mcp.message"] = message
    protocol.check_version(request.headers.get("MCP-Protocol-Version"))
    try:
        authenticate(defer_limit=True)
    except Problem as refused:
        raise RpcError(
            protocol.UNAUTHORIZED,
            refused.detail,
            status=refused.status,
            headers={**refused.headers, "WWW-Authenticate": CHALLENGES},
        ) from None
    except OUTAGES as outage:
        raise _unavailable(outage) from None
    return message


def _allowed_origin(origin: str) -> bool:
    """Our own site's origin, and those ``MCP_ALLOWED_ORIGINS`` names ("*": any). Servers
    must check it (a page that rebinds a name to this server could otherwise call it)."""
    allowed = current_app.config["MCP_ALLOWED_ORIGINS"] or ""
    names = {name.strip().rstrip("/") for name in allowed.split(",") if name.strip()}
    return "*" in names or origin.rstrip("/") in names | {urls.base_url().rstrip("/")}


def _answer(message: Message):
    method, params = message.method, message.params
    try:
        if method == "initialize":
            _toolset()  # a selection naming what is not a tool is refused at once
            requested = params.get("protocolVersion")
            result = {
                "protocolVersion": protocol.negotiated(requested),
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": SERVER_INFO,
                "instructions": INSTRUCTIONS,
            }
            return _json(message.id, result)
        if method == "ping":
            return _json(message.id, {})
        if method == "tools/list":
            return _json(message.id, toolset.list_result(_toolset(), _catalogue()))
        if method == "tools/call":
            return _call(message)
    except OUTAGES as outage:
        raise _unavailable(outage) from None
    raise RpcError(protocol.METHOD_NOT_FOUND, f"Method not found: {method}", data=method)


def _json(request_id, result) -> FlaskResponse:
    return protocol.json_response(protocol.result_bytes(request_id, result))


def _catalogue():
    return current_app.extensions["catalogue"]


def _toolset() -> toolset.Toolset:
    """The tools this request lists and may call: ``?tools=``, else the key's own
    selection, else the default tools (400 for names that are not tools)."""
    selection = request.args.get("tools")
    if selection is None:
        selection = current_key().mcp_tools
    try:
        return toolset.read_selection(selection, _catalogue())
    except toolset.SelectionError as wrong:
        raise RpcError(protocol.INVALID_PARAMS, str(wrong), status=400) from None


def _call(message: Message):
    name, arguments = message.params.get("name"), message.params.get("arguments") or {}
    if not isinstance(name, str):
        raise RpcError(protocol.INVALID_PARAMS, "tools/call needs the tool's name.")
    size = request.content_length or 0
    try:
        outcome = calls.call(name, arguments, _toolset(), size)
    except calls.UnknownTool:
        raise RpcError(
            protocol.INVALID_PARAMS, f"Unknown tool: {name} (tools/list lists this server's)."
        ) from None
    except Problem as refused:
        outcome = calls.problem_result(refused)
    try:
        settle_limit()  # the call's per-minute hit, unless its run's admission spent it
    except Problem as limited:
        outcome = calls.problem_result(limited)
    if not isinstance(outcome, calls.Started):
        db.session.commit()
        return _json(message.id, outcome)
    wait = float(current_app.config["MCP_WAIT_SECONDS"])
    run_id, model = outcome.run.id, type(outcome.run)
    db.session.close()  # nothing is held while the run is followed
    if (
        message.progress_token is not None
        and request.accept_mimetypes.find("text/event-stream") >= 0
    ):
        return _streamed(message, outcome, run_id, model, wait)
    ended = None
    for step in follow_run(model, run_id, None, wait):
        if step.ended is not None:
            ended = step.ended
    return _json(message.id, _result(outcome, run_id, model, ended))


def _result(outcome: calls.Started, run_id: str, model, ended) -> dict:
    """The call's result once its run has ended (``ended``) or the wait ran out (None: the
    run goes on, and its end will be announced by its webhook event)."""
    if ended is None and model is Run:
        launch.stop_waiting(run_id)
    run = ended if ended is not None else db.session.get(model, run_id, populate_existing=True)
    result = calls.ended_result(run, direct=outcome.direct)
    db.session.close()
    return result


def _streamed(message: Message, outcome: calls.Started, run_id: str, model, wait: float):
    token = message.progress_token

    def progress(value: float, text: str, total: float | None = None) -> str:
        params = {"progressToken": token, "progress": value, "message": text}
        if total is not None:
            params["total"] = total
        return protocol.sse_frame(protocol.notification_bytes("notifications/progress", params))

    def generate() -> Iterator[str]:
        ended, written, steps = None, 0, 0
        total = 2 * len(_steps(outcome.run)) if model is WorkflowRun else None
        said = time.monotonic()
        yield progress(0, "The run is queued.", total)
        try:
            for step in follow_run(model, run_id, None, wait):
                if step.ended is not None:
                    ended = step.ended
                    break
                event = step.event
                if event is None:
                    yield ": keep-alive\n\n"
                elif model is WorkflowRun and event.kind in (STEP_STARTED, STEP_ENDED):
                    steps += 1
                    data = event.data
                    verb = "started" if event.kind == STEP_STARTED else data.get("status", "ended")
                    text = f"Step {data.get('step')} ({data.get('tool')}) {verb}."
                    yield progress(steps, text, total)
                elif model is Run and event.kind == "delta":
                    written += len(event.data.get("text", ""))
                    if time.monotonic() - said >= PROGRESS_EVERY:
                        said = time.monotonic()
                        yield progress(written, f"{written} characters written.")
            result = _result(outcome, run_id, model, ended)
            yield protocol.sse_frame(protocol.result_bytes(message.id, result))
        except GeneratorExit:  # the client went away: the run goes on, announced when it ends
            if model is Run:
                launch.stop_waiting(run_id)
            raise
        except Exception:  # noqa: BLE001 - said to the client, who would otherwise hang
            log.exception("the MCP call following run %s broke off", run_id)
            db.session.close()
            error = RpcError(
                protocol.INTERNAL_ERROR,
                f"Following the run broke off; it goes on. Call get_run with {run_id}.",
                data={"run_id": run_id},
            )
            yield protocol.sse_frame(protocol.error_bytes(message.id, error))

    response = FlaskResponse(stream_with_context(generate()), mimetype="text/event-stream")
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Accel-Buffering"] = "no"  # proxies: pass each event on at once
    return response


def _steps(run: WorkflowRun) -> list:
    workflow = current_app.extensions["workflows"].get(run.workflow_id)
    return list(workflow.steps) if workflow is not None else []


def _unavailable(outage: Exception) -> RpcError:
    log.warning("MCP request refused, a backing service is down: %s", outage)
    return RpcError(
        protocol.UNAVAILABLE,
        f"A service this server needs is unavailable; try again in {OUTAGE_RETRY_AFTER} s.",
        data={"retry_after": OUTAGE_RETRY_AFTER},
        status=503,
        headers={"Retry-After": OUTAGE_RETRY_AFTER},
    )
