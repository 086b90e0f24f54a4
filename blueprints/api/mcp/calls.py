"""What a ``tools/call`` does, through the same steps as the REST API's endpoints: the same
plan checks, input checks, admission (per-minute limit and daily quota), run path
(``jobs.launch``, ``source`` mcp) and records. A refusal is the REST API's problem, given to
the agent as a tool result with ``isError`` whose text names its ``code`` and what to do,
so that it can correct itself.

A call either ends here (``Result``: a light tool's run, a search, a run read) or has
started a queued run (``Started``), which the endpoint waits for, with progress when the
client asked for it (``routes``), then turns into its result (``ended_result``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import orjson
from flask import current_app

from blueprints.api.mcp.toolset import (
    SEARCH_LIMIT_DEFAULT,
    SEARCH_LIMIT_MAX,
    Toolset,
)
from blueprints.api.pipeline import current_key, require_api_access, require_plan
from blueprints.api.problems import Problem
from blueprints.api.tools.runs import (
    checked_inputs,
    find_tool,
    own_run,
    run_problem,
    run_record,
    start_tool_run,
)
from blueprints.api.workflows.runs import (
    find_workflow,
    own_workflow_run,
    start_workflow_run,
    workflow_run_ending,
)
from blueprints.api.workflows.runs import (
    run_record as workflow_record,
)
from catalogue import CATEGORIES, Tool, Workflow
from engines import get_engine
from models import Run, WorkflowRun
from services import runs
from services.assistant.search import search_catalogue

# A result's text gives its output as JSON up to this size; past it, a note that the
# output is in structuredContent (clients that read only text would get a wall of JSON).
TEXT_OUTPUT_MAX = 100_000


Result = dict  # a CallToolResult, as JSON


@dataclass(frozen=True)
class Started:
    """A queued run the call started: the endpoint follows it for up to its wait."""

    run: Run | WorkflowRun
    direct: bool  # called by its slug (a selected tool): its result must match its schema


class UnknownTool(LookupError):
    """A tool name the toolset does not list: a JSON-RPC error (-32602), not a result."""


def call(name: str, arguments: Any, toolset: Toolset, size: int) -> Result | Started:
    """Call the tool ``name`` of ``toolset`` with ``arguments`` (``size``: the bytes of the
    request that carried them). Problems raised on the way are the caller's to turn into
    ``isError`` results (``problem_result``)."""
    if not toolset.has(name):
        raise UnknownTool(name)
    if not isinstance(arguments, dict):
        raise Problem(422, "validation_failed", "The arguments must be an object.")
    handler = _META.get(name)
    if handler is not None:
        return handler(arguments, size)
    return _run(find_tool(name), dict(arguments), size, direct=True)


# --- the default tools --------------------------------------------------------------------


def _search(arguments: dict, size: int) -> Result:
    query, category = arguments.get("query"), arguments.get("category")
    limit = arguments.get("limit", SEARCH_LIMIT_DEFAULT)
    errors = {}
    if not isinstance(query, str) or not query.strip():
        errors["query"] = ["Say what you want to do, in a few words."]
    if category is not None and category not in CATEGORIES:
        errors["category"] = [f"One of: {', '.join(CATEGORIES)}."]
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= SEARCH_LIMIT_MAX:
        errors["limit"] = [f"An integer from 1 to {SEARCH_LIMIT_MAX}."]
    _refuse_unknown(arguments, ("query", "category", "limit"), errors)
    catalogue = current_app.extensions["catalogue"]
    tools = catalogue.filter(category=category)
    workflows = current_app.extensions["workflows"] if category is None else ()
    found = search_catalogue(query[:500], tools, workflows, limit=limit)
    results = [_summary(item) for item in found]
    if results:
        text = "\n".join(
            f"- {item['slug']} ({item['kind']}): {item['summary']} {_credits(item['credits'])}; "
            f"{item['plan']} plan; {_can_run(item)}"
            for item in results
        )
    else:
        text = "Nothing in the catalogue matches that well; say it in other words."
    return {"content": [_text(text)], "structuredContent": {"results": results}}


def _credits(credits: int) -> str:
    return f"{credits} credit" if credits == 1 else f"{credits} credits"


def _can_run(item: dict) -> str:
    return "this key can run it" if item["can_run"] else "this key cannot run it"


def _summary(item: Tool | Workflow) -> dict:
    context = current_key()
    allowed = context.plan.api_access and context.plan.includes(item.required_plan)
    if isinstance(item, Tool):
        runs_here = context.sandbox or get_engine(item.engine).unavailable_reason() is None
        return {
            "kind": "tool",
            "slug": item.slug,
            "name": item.name,
            "summary": item.summary,
            "category": item.category,
            "credits": item.credits,
            "plan": item.required_plan,
            "can_run": allowed and runs_here,
            "queued": item.queue,
        }
    tools = current_app.extensions["catalogue"]
    runs_here = context.sandbox or all(
        get_engine(tools.get(step.tool).engine).unavailable_reason() is None for step in item.steps
    )
    return {
        "kind": "workflow",
        "slug": item.id,
        "name": item.name,
        "summary": item.summary,
        "credits": item.credits,
        "plan": item.required_plan,
        "can_run": allowed and runs_here,
        "queued": True,
    }


def _describe(arguments: dict, size: int) -> Result:
    slug = arguments.get("slug")
    errors = {} if isinstance(slug, str) else {"slug": ["A tool's slug or a workflow's id."]}
    _refuse_unknown(arguments, ("slug",), errors)
    tool = current_app.extensions["catalogue"].get(slug)
    if tool is not None:
        described = {"kind": "tool", **tool.to_public()}
    else:
        described = {"kind": "workflow", **_described_workflow(slug).to_public()}
    return {"content": [_text(_json(described))], "structuredContent": described}


def _described_workflow(slug: str) -> Workflow:
    try:
        return find_workflow(slug)
    except Problem:
        raise Problem(
            404,
            "tool_not_found",
            f"There is no tool or workflow {slug!r}; search_tools finds them.",
        ) from None


def _run_tool(arguments: dict, size: int) -> Result | Started:
    slug, given = arguments.get("slug"), arguments.get("input")
    errors = {}
    if not isinstance(slug, str):
        errors["slug"] = ["The tool's slug (search_tools finds it)."]
    if isinstance(given, str):
        given = {"input": given}  # the tool's main field, as the REST API's alias
    elif not isinstance(given, dict):
        errors["input"] = ["An object of the tool's own fields (describe_tool gives them)."]
    _refuse_unknown(arguments, ("slug", "input"), errors)
    require_api_access()  # before the slug is looked up, as the REST API's order says
    return _run(find_tool(slug), dict(given), size, direct=False)


def _run(tool: Tool, given: dict, size: int, *, direct: bool) -> Result | Started:
    require_api_access()
    require_plan(tool.required_plan)
    inputs = checked_inputs(tool, given, {}, size)
    started = start_tool_run(
        tool, inputs, queued=False, awaited=False, announce=False, source="mcp"
    )
    if not started.finished:
        return Started(started.run, direct)
    return output_result(started.run.output, run_meta(started.run))


def _run_workflow(arguments: dict, size: int) -> Result | Started:
    workflow_id, given = arguments.get("workflow_id"), arguments.get("input")
    errors = {} if isinstance(workflow_id, str) else {"workflow_id": ["A workflow's id."]}
    if "input" not in arguments:
        errors["input"] = ["Missing required field."]
    _refuse_unknown(arguments, ("workflow_id", "input"), errors)
    require_api_access()
    workflow = find_workflow(workflow_id)
    return Started(start_workflow_run(workflow, given, size, source="mcp"), direct=False)


def _get_run(arguments: dict, size: int) -> Result:
    run_id = arguments.get("run_id")
    errors = {}
    try:
        run_id = str(uuid.UUID(run_id))
    except (TypeError, ValueError, AttributeError):
        errors["run_id"] = ["A run's id, as run_tool or run_workflow answered it."]
    _refuse_unknown(arguments, ("run_id",), errors)
    try:
        run: Run | WorkflowRun = own_run(run_id)
    except Problem:
        try:
            run = own_workflow_run(run_id)
        except Problem:
            raise Problem(
                404, "run_not_found", f"There is no run {run_id} for this API key's account."
            ) from None
    if run.status == "failed":
        return ended_result(run, direct=False)
    record = _record(run)
    result = ended_result(run, direct=False)
    return {**result, "structuredContent": record}


_META = {
    "search_tools": _search,
    "describe_tool": _describe,
    "run_tool": _run_tool,
    "get_run": _get_run,
    "run_workflow": _run_workflow,
}


def _refuse_unknown(arguments: dict, known: tuple[str, ...], errors: dict) -> None:
    errors = errors | {name: ["Unknown argument."] for name in arguments if name not in known}
    if errors:
        fields = ", ".join(sorted(errors))
        raise Problem(
            422, "validation_failed", f"The arguments have invalid fields: {fields}.", errors=errors
        )


# --- results ------------------------------------------------------------------------------


def ended_result(run: Run | WorkflowRun, *, direct: bool) -> Result:
    """The result of a run as it now is: its output once it succeeded, its failure as an
    error, else its state and how to read it later."""
    if run.status == "succeeded":
        return output_result(run.output or {}, run_meta(run))
    if run.status == "failed":
        if isinstance(run, WorkflowRun):
            _, body = workflow_run_ending(run)
            problem = Problem(body["status"], body["code"], body["detail"])
            return problem_result(problem, step=body.get("step"), run_id=run.id)
        return problem_result(run_problem(run.id, run.error or {}))
    state = {"run_id": run.id, "status": run.status, "status_url": _record(run)["status_url"]}
    if run.status == "canceled":
        text = f"The run {run.id} was canceled; nothing was charged."
    else:
        text = (
            f"The run {run.id} is still {run.status}: it goes on. Call get_run with this "
            "run_id in a little while to read its result."
        )
    if direct:  # its result would not match the tool's output schema: say it as an error
        return {"content": [_text(text)], "isError": True, "_meta": state}
    return {"content": [_text(text)], "structuredContent": state, "_meta": state}


def _record(run: Run | WorkflowRun) -> dict:
    return workflow_record(run) if isinstance(run, WorkflowRun) else run_record(run)


def run_meta(run) -> dict:
    """What a result says of its run beside the output (``_meta``)."""
    meta = {"run_id": run.id, "status": run.status}
    if isinstance(run, WorkflowRun):
        meta["credits"] = _record(run)["credits"]
        return meta
    meta["credits"] = run.credits
    note = runs.quality_note(run.model)
    if note:
        meta["quality_note"] = note
    return meta


def output_result(output: dict, meta: dict) -> Result:
    """A run's output: ``structuredContent``, the same as JSON text (for clients that read
    only text), the embedded model's note when it wrote it, and a ``resource_link`` for
    each file (its download URL; never the bytes)."""
    text = _json(output)
    if len(text) > TEXT_OUTPUT_MAX:
        text = (
            f"The output is {len(text) // 1000} KB of JSON, too long to repeat as text: read "
            "it in structuredContent."
        )
    content = [_text(text)]
    if meta.get("quality_note"):
        content.append(_text(meta["quality_note"]))
    content += [_link(file, path) for path, file in files_in(output)]
    return {"content": content, "structuredContent": output, "_meta": meta}


def problem_result(problem: Problem, **context) -> Result:
    """A refusal or failure as the agent reads it: the problem's code and status, what went
    wrong and what to do (upgrade URL, when the quota resets, the fields to correct)."""
    lines = [f"{problem.code} ({problem.status}): {problem.detail}"]
    extensions = problem.extensions
    for name in ("upgrade_url", "required_plan", "resets_at", "limit", "run_id"):
        if extensions.get(name) is not None:
            lines.append(f"{name}: {extensions[name]}")
    retry_after = problem.headers.get("Retry-After")
    if retry_after is not None:
        lines.append(f"retry_after: {retry_after} s")
    for field, messages in (extensions.get("errors") or {}).items():
        lines.append(f"- {field or '(input)'}: {' '.join(messages)}")
    for name, value in context.items():
        if value is not None:
            lines.append(f"{name}: {value}")
    return {"content": [_text("\n".join(lines))], "isError": True}


def files_in(output: Any, path: str = "") -> list[tuple[str, dict]]:
    """The stored files in an output (``{"id", "url", "content_type", "size", ...}``
    objects, services/tool_files.py), with where each is."""
    if isinstance(output, dict):
        if isinstance(output.get("url"), str) and "content_type" in output and "id" in output:
            return [(path, output)]
        found = []
        for key, value in output.items():
            found += files_in(value, f"{path}.{key}" if path else key)
        return found
    if isinstance(output, list):
        return [hit for i, item in enumerate(output) for hit in files_in(item, f"{path}[{i}]")]
    return []


def _link(file: dict, path: str) -> dict:
    link = {
        "type": "resource_link",
        "uri": file["url"],
        "name": file.get("filename") or file["id"],
        "mimeType": file["content_type"],
        "description": f"The output's {path}." if path else "The output file.",
    }
    if isinstance(file.get("size"), int):
        link["size"] = file["size"]
    return link


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()
