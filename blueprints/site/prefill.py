"""Run again: a tool's or a workflow's form filled from one of the visitor's runs
(``?from_run=<run id>``), without running anything. A run the visitor may not see (another
account's, another visitor's) fills nothing, as if it did not exist."""

from __future__ import annotations

from flask import request
from flask_login import current_user

from blueprints.site.access import current_membership
from blueprints.site.visitor import current_visitor
from catalogue import Tool
from models import Run, WorkflowRun
from services import run_history


def _visible_run(run_id: str) -> Run | WorkflowRun | None:
    """The run, when it is one of the signed-in member's current account or one this
    visitor ran on the site."""
    if not run_id or len(run_id) > 36:
        return None
    if current_user.is_authenticated:
        membership = current_membership()
        if membership is not None:
            run = run_history.find(membership.account_id, run_id)
            if run is not None:
                return run
    run = run_history.find_any(run_id)
    visitor_id = current_visitor().visitor.id
    if isinstance(run, Run) and run.source == "web" and run.visitor_id == visitor_id:
        return run
    return None


def tool_values(tool: Tool) -> dict | None:
    """The inputs of the run ``?from_run=`` names, as the tool's form shows them (files are
    chosen again: their fields stay empty), or None."""
    run = _visible_run(request.args.get("from_run", "").strip())
    if not isinstance(run, Run) or run.tool_slug != tool.slug or not isinstance(run.input, dict):
        return None
    return run_values(tool, run.input)


def run_values(tool: Tool, inputs: dict) -> dict:
    """A run's stored ``inputs`` as the tool's form shows them (files are chosen again:
    their fields stay empty). The widget's run page fills its form with it too."""
    return {
        name: value
        for name, value in inputs.items()
        if name not in tool.binary_inputs and not (isinstance(value, dict) and "file_id" in value)
    }


def workflow_value(workflow_id: str) -> str | None:
    """The text input of the workflow run ``?from_run=`` names, or None."""
    run = _visible_run(request.args.get("from_run", "").strip())
    if not isinstance(run, WorkflowRun) or run.workflow_id != workflow_id:
        return None
    return run.input if isinstance(run.input, str) else None
