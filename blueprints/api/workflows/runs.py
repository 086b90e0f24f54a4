"""What the API answers about workflow runs, for every endpoint that starts or reads them
(``blueprints.api.workflows``, the MCP endpoint) and the site's account pages: finding a
workflow and the caller's run of it, the run's status record with its steps, and the last
event of its stream."""

from blueprints.api.pipeline import current_key
from blueprints.api.problems import Problem, problem_body
from blueprints.api.tools.runs import run_problem
from blueprints.api.workflows.schemas import WorkflowRunRecordSchema
from catalogue import Workflow
from extensions import db
from models import WorkflowRun
from services import clock, workflows
from services.urls import absolute_url_for


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
