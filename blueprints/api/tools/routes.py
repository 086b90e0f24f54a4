from flask import g
from flask.views import MethodView
from flask_smorest import Blueprint

from blueprints.api.docs import API_KEY_SECURITY, PUBLIC, problem_responses
from blueprints.api.pipeline import (
    authenticate,
    json_body,
    require_api_access,
    require_plan,
    validation_failed,
)
from blueprints.api.problems import Problem
from blueprints.api.schemas import RunResultSchema
from blueprints.api.tools.schemas import ToolListSchema, ToolQuerySchema, ToolSchema
from catalogue import Tool, load_catalogue
from extensions import db
from services import clock
from services.quota import Usage
from services.runs import QuotaExceeded, RunFailed, run_inline

blp = Blueprint("tools", __name__, url_prefix="/v1", description="Run tools; browse the catalogue.")

_RUN_ERRORS = (400, 401, 402, 403, 404, 413, 415, 422, 429, 503)


def find_tool(slug: str) -> Tool:
    tool = load_catalogue().get(slug)
    if tool is None:
        raise Problem(404, "tool_not_found", f"There is no tool with the slug {slug!r}.")
    return tool


def tool_inputs(tool: Tool, body: dict) -> dict:
    """Map the ``input`` alias to the tool's main field, then validate (422)."""
    if "input" in body:
        if tool.primary in body:
            raise validation_failed({"input": [f"Send either input or {tool.primary}, not both."]})
        body[tool.primary] = body.pop("input")
    errors = tool.validate(body)
    if errors:
        raise validation_failed(errors)
    return tool.with_defaults(body)


def run_tool_request(tool: Tool, inputs: dict) -> dict:
    """Run ``tool`` inline for the authenticated key and shape the answer (429, 422, 503)."""
    try:
        result = run_inline(g.key, tool, inputs)
    except QuotaExceeded as refused:
        reservation = refused.reservation
        g.day_usage = Usage(reservation.day, reservation.used, 0)
        retry_after = clock.seconds_to_midnight()
        raise Problem(
            429,
            "quota_exceeded",
            f"This key has used all {reservation.limit} calls of today (UTC); "
            "the quota resets at 00:00 UTC.",
            headers={"Retry-After": retry_after},
            limit=reservation.limit,
            remaining=0,
            resets_at=clock.next_midnight().isoformat().replace("+00:00", "Z"),
        ) from None
    except RunFailed as failed:
        problem = _run_problem(failed)
        db.session.commit()
        raise problem from None
    run = result.run
    body = {
        "run_id": run.id,
        "tool": run.tool_slug,
        "status": run.status,
        "output": run.output,
        "credits": run.credits,
        "duration_ms": run.duration_ms,
        "sandbox": run.sandbox,
    }
    # The answer is built before the commit: reading the run afterwards would reload it.
    db.session.commit()
    if result.reservation is not None:
        g.day_usage = Usage(result.reservation.day, result.reservation.used, 0)
    return body


def _run_problem(failed: RunFailed) -> Problem:
    if failed.kind == "input":
        return Problem(
            422,
            "validation_failed",
            failed.message,
            errors={"": [failed.message]},
            run_id=failed.run.id,
        )
    if failed.kind == "provider":
        return Problem(
            503,
            "provider_unavailable",
            failed.message,
            headers={"Retry-After": failed.retry_after or 30},
            run_id=failed.run.id,
        )
    return Problem(500, "internal_error", failed.message, run_id=failed.run.id)


@blp.route("/tools")
class Tools(MethodView):
    @blp.arguments(ToolQuerySchema, location="query")
    @blp.response(200, ToolListSchema)
    @blp.doc(security=PUBLIC, responses=problem_responses(422))
    def get(self, query):
        """List the tool catalogue, optionally by category or by what a plan can run."""
        tools = [tool.to_public() for tool in load_catalogue().filter(**query)]
        return {"tools": tools, "count": len(tools)}


@blp.route("/tools/<slug:slug>")
class ToolBySlug(MethodView):
    @blp.response(200, ToolSchema)
    @blp.doc(security=PUBLIC, responses=problem_responses(404))
    def get(self, slug):
        """One tool: its input and output schemas, plan, credits and availability."""
        return find_tool(slug).to_public()


@blp.route("/public/tools/<slug:slug>/run")
class RunBySlug(MethodView):
    @blp.response(200, RunResultSchema)
    @blp.doc(
        security=API_KEY_SECURITY,
        requestBody={
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "required": ["input"],
                        "properties": {
                            "input": {
                                "type": "string",
                                "description": "The tool's main input (its primary field).",
                            }
                        },
                        "additionalProperties": True,
                    },
                    "example": {"input": "Flask is a lightweight web framework for Python."},
                }
            },
        },
        responses=problem_responses(*_RUN_ERRORS),
    )
    def post(self, slug):
        """Run a tool by slug with `{"input": "..."}` (402 below Pro)."""
        authenticate()
        require_api_access(on_slug_endpoint=True)
        body = json_body()
        tool = find_tool(slug)
        require_plan(tool.required_plan)
        return run_tool_request(tool, tool_inputs(tool, body))


@blp.route("/tools/run")
class RunDispatch(MethodView):
    @blp.response(200, RunResultSchema)
    @blp.doc(
        security=API_KEY_SECURITY,
        requestBody={
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "required": ["slug"],
                        "properties": {
                            "slug": {"type": "string", "description": "The tool to run."},
                            "input": {
                                "type": "string",
                                "description": "Alias for the tool's primary field.",
                            },
                        },
                        "additionalProperties": True,
                    },
                    "example": {"slug": "keyword-extractor", "input": "Flask web framework"},
                }
            },
        },
        responses=problem_responses(*_RUN_ERRORS),
    )
    def post(self):
        """Run any tool: `slug` plus the tool's own fields (403 for Free/Starter keys)."""
        authenticate()
        require_api_access()
        body = json_body()
        slug = body.pop("slug", None)
        if slug is None:
            raise validation_failed({"slug": ["Missing required field."]})
        if not isinstance(slug, str):
            raise validation_failed({"slug": ["Must be a string."]})
        tool = find_tool(slug)
        require_plan(tool.required_plan)
        return run_tool_request(tool, tool_inputs(tool, body))
