"""Workflows started from the site: a signed-in member of a Pro (or higher) account starts a
run from ``/workflows/<id>/`` and lands on its page in the run history, with live progress.

The run goes through services/workflows.py, as the API's ``POST /v1/workflows/run`` does.
It belongs to the account and to no key (``workflows.member_context``): its steps are web
runs of the member who started it, charged credits (and the account's free calls) as an API
run's are, counted in the dashboard as web usage; there is no key, so no key's daily quota
is reserved (Pro and above run without a daily limit on the site) and no webhook is sent.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from flask import abort, g, make_response, redirect, render_template, request, url_for
from flask_login import current_user
from sqlalchemy import func, select

from blueprints.site.access import current_membership, member_required
from blueprints.site.catalogue import input_facts, stages, tools_catalogue, workflows_catalogue
from blueprints.site.prefill import workflow_value
from blueprints.site.routes import bp
from catalogue import Workflow
from catalogue.tool import MAX_FILE_BYTES
from extensions import db
from jobs import launch
from models import WorkflowRun
from services import workflows
from services.binary import BinaryInputError
from services.plans import get_plan
from services.workflows import InputRefused

# Runs of one account started on the site that may be unfinished at once: a click more is
# asked to wait (a safeguard against a form sent in a loop; the API has its quota).
MAX_UNFINISHED = 10


@dataclass(frozen=True)
class Starter:
    """What the workflow page offers the visitor: ``state`` is signed_out, plan (the plan is
    below the workflow's), unavailable (a step cannot run here: ``reason``) or ready."""

    state: str
    plan_name: str = ""
    reason: str = ""
    value: str = ""


def _unavailable(workflow: Workflow) -> str | None:
    tools = tools_catalogue()
    for step in workflow.steps:
        tool = tools.get(step.tool)
        reason = "It is no longer in the catalogue." if tool is None else tool.unavailable_reason
        if reason:
            return f"The step {step.id} runs {step.tool}, which cannot run here. {reason}"
    return None


def starter(workflow: Workflow) -> Starter:
    """The workflow page's start form for this visitor (a template global: only that page
    asks, so other pages pay nothing for it)."""
    if not current_user.is_authenticated or current_membership() is None:
        return Starter("signed_out")
    plan = get_plan(g.account.plan_name)
    if not plan.includes(workflow.required_plan):
        return Starter("plan", plan_name=plan.name)
    reason = _unavailable(workflow)
    if reason:
        return Starter("unavailable", plan_name=plan.name, reason=reason)
    return Starter("ready", plan_name=plan.name, value=workflow_value(workflow.id) or "")


bp.add_app_template_global(starter, "workflow_starter")


def _refused(workflow: Workflow, status: int, message: str, value: str = "", field: bool = True):
    """The workflow's page again, the refusal beside the input (``field``) or above it."""
    body = render_template(
        "site/workflow.html",
        workflow=workflow,
        stages=stages(workflow),
        tools={step.tool: tools_catalogue().get(step.tool) for step in workflow.steps},
        input=input_facts(workflow),
        start_error=message if field else None,
        start_refusal=None if field else message,
        start_value=value,
    )
    response = make_response(body, status)
    response.headers["Cache-Control"] = "private, no-store"
    return response


def _read_input(workflow: Workflow) -> tuple[str | None, str | None]:
    """The run's input from the form: its text, or an uploaded file as a ``data:`` URI;
    with a message when it is missing or too large."""
    if not workflow.binary_input:
        value = request.form.get("input", "").replace("\r\n", "\n")
        if not value.strip():
            return None, "Write the input first."
        return value, None
    upload = request.files.get("file")
    if upload is None or not upload.filename:
        return None, "Choose a file first."
    data = upload.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        return None, f"The file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB."
    kind = upload.mimetype or "application/octet-stream"
    return f"data:{kind};base64,{base64.b64encode(data).decode('ascii')}", None


@bp.post("/workflows/<workflow_id>/run")
@member_required()
def start_workflow_run(workflow_id: str):
    """Start a run of the workflow for the current account, then show its page."""
    workflow = workflows_catalogue().get(workflow_id)
    if workflow is None:
        abort(404)
    account = g.account
    plan = get_plan(account.plan_name)
    typed = request.form.get("input", "")
    if not plan.includes(workflow.required_plan):
        message = (
            f"Running workflows on the site needs the {workflow.required_plan.capitalize()} "
            f"plan or above; {account.name} is on {plan.name.capitalize()}."
        )
        return _refused(workflow, 402, message, typed, field=False)
    reason = _unavailable(workflow)
    if reason:
        return _refused(workflow, 503, reason, typed, field=False)
    if _unfinished(account.id) >= MAX_UNFINISHED:
        message = (
            f"{account.name} already has {MAX_UNFINISHED} workflow runs going that were "
            "started here. Wait for one to end (or cancel one in Runs), then start this one."
        )
        return _refused(workflow, 429, message, typed, field=False)
    value, problem = _read_input(workflow)
    if problem is None and not workflow.binary_input:
        errors = workflow.validate(value)
        problem = " ".join(" ".join(messages) for messages in errors.values()) or None
    if problem is not None:
        return _refused(workflow, 422, problem, typed)
    try:
        stored = workflows.store_input(workflow, value, account.id)
        run, _ = launch.start_workflow(
            workflows.member_context(account, plan),
            workflow,
            stored,
            admit=workflows.no_reservation,
            user_id=current_user.id,
        )
    except BinaryInputError as refused:
        db.session.rollback()
        return _refused(workflow, refused.status, refused.message, typed)
    except InputRefused as refused:
        db.session.rollback()
        message = " ".join(" ".join(messages) for messages in refused.errors.values())
        return _refused(workflow, 422, message, typed)
    run_id = run.id
    return redirect(url_for("site.account_run", run_id=run_id), 303)


def _unfinished(account_id: int) -> int:
    return db.session.scalar(
        select(func.count())
        .select_from(WorkflowRun)
        .where(
            WorkflowRun.account_id == account_id,
            WorkflowRun.api_key_id.is_(None),
            WorkflowRun.status.in_(("queued", "running")),
        )
    )
