"""What the API answers about workflow runs, for every endpoint that starts or reads them
(``blueprints.api.workflows``, the MCP endpoint) and the site's account pages: finding a
workflow and the caller's run of it, the run's status record with its steps, and the last
event of its stream."""

from flask import current_app

from blueprints.api.pipeline import (
    admit_run,
    current_key,
    note_usage,
    quota_problem,
    require_plan,
    too_large,
    validation_failed,
)
from blueprints.api.problems import Problem, problem_body
from blueprints.api.tools.runs import refuse_if_unavailable, run_problem
from blueprints.api.workflows.schemas import WorkflowRunRecordSchema
from catalogue import Workflow
from extensions import db
from jobs import launch
from models import WorkflowRun
from services import clock, workflows
from services.binary import BinaryInputError
from services.runs import QuotaExceeded
from services.urls import absolute_url_for
from services.workflows import InputRefused


def find_workflow(workflow_id: str) -> Workflow:
    workflow = workflows.find_workflow(workflow_id)
    if workflow is None:
        raise Problem(
            404, "workflow_not_found", f"There is no workflow with the id {workflow_id!r}."
        )
    return workflow


def own_workflow_run(run_id) -> WorkflowRun:
    """The calling account's workflow run, or 404 (never 403: existence is not revealed)."""
    run = db.session.get(WorkflowRun, str(run_id))
    if run is None or run.account_id != current_key().account_id:
        raise Problem(404, "run_not_found", f"There is no workflow run {run_id} for this account.")
    return run


def start_workflow_run(
    workflow: Workflow, value, size: int, *, errors: dict | None = None, source: str = "api"
) -> WorkflowRun:
    """Start a run of ``workflow`` on its input ``value`` for the request's key
    (``jobs.launch``), admitted with the request's deferred per-minute hit; ``size``: the
    bytes the input came in. Refused as problems: 402 below the workflow's plan, 503 when a
    step cannot run here, 413 for a text input over ``MAX_TEXT_BODY``, 422 for an invalid
    input (with the caller's own ``errors``), 429 for a quota used up."""
    require_plan(workflow.required_plan)
    context = current_key()
    config = current_app.config
    if not context.sandbox:  # a step that cannot run here: refused before anything
        tools = current_app.extensions["catalogue"]
        for step in workflow.steps:
            refuse_if_unavailable(tools.get(step.tool), step=step.id)
    if not workflow.binary_input and size > config["MAX_TEXT_BODY"]:
        raise too_large()
    errors = dict(errors or {})
    if "input" not in errors:  # the caller's: none sent
        errors |= workflow.validate(value)
    if errors:
        raise validation_failed(errors)
    try:
        stored = workflows.store_input(workflow, value, context.account_id)
        run, reservation = launch.start_workflow(
            context, workflow, stored, admit=admit_run, source=source
        )
    except BinaryInputError as refused:
        if refused.status == 413:
            raise Problem(413, "payload_too_large", refused.message) from None
        raise validation_failed({"input": [refused.message]}) from None
    except InputRefused as refused:
        raise validation_failed(refused.errors) from None
    except QuotaExceeded as refused:
        raise quota_problem(refused.reservation) from None
    note_usage(reservation)
    return run


def run_record(run: WorkflowRun) -> dict:
    """Everything about a workflow run and its steps, finished or not."""
    workflow = workflows.find_workflow(run.workflow_id)
    steps = {step.step_id: step for step in workflows.step_runs(run.id)}
    depends = {s.id: list(s.depends_on) for s in workflow.steps} if workflow else {}
    order = list(depends) if set(depends) == set(steps) else sorted(steps)
    records = [
        {
            "id": step_id,
            "tool": steps[step_id].tool_slug,
            "status": steps[step_id].status,
            "depends_on": depends.get(step_id, []),
            "run_id": steps[step_id].id,
            "output": steps[step_id].output,
            "error": steps[step_id].error,
            "credits": steps[step_id].credits,
            "started_at": clock.as_utc(steps[step_id].started_at),
            "finished_at": clock.as_utc(steps[step_id].finished_at),
            "duration_ms": steps[step_id].duration_ms,
        }
        for step_id in order
    ]
    return {
        "run_id": run.id,
        "workflow_id": run.workflow_id,
        "status": run.status,
        "progress": {
            "completed_steps": sum(step.status == "succeeded" for step in steps.values()),
            "total_steps": len(steps),
        },
        "steps": records,
        "output": run.output,
        "error": run.error,
        "credits": sum(step.credits for step in steps.values()),
        "sandbox": run.sandbox,
        "created_at": clock.as_utc(run.created_at),
        "started_at": clock.as_utc(run.started_at),
        "finished_at": clock.as_utc(run.finished_at),
        "duration_ms": run.duration_ms,
        "status_url": absolute_url_for("workflows.WorkflowRunStatus", run_id=run.id),
    }


def workflow_run_ending(run: WorkflowRun) -> tuple[str, dict]:
    """The last event of a workflow run's stream: ``error`` with the problem document of
    its failure (the step that failed named), or ``done`` with its status record."""
    if run.status != "failed":
        return "done", WorkflowRunRecordSchema().dump(run_record(run))
    error = run.error or {}
    if error.get("code") == "canceled":
        problem = Problem(409, "step_canceled", error.get("message", ""), run_id=run.id)
    else:
        problem = run_problem(run.id, error)
    body = problem_body(problem)
    if error.get("step"):
        body |= {"step": error["step"], "tool": error.get("tool")}
    return "error", body
