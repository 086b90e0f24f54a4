"""Workflow runs: start (one quota call per step, all or nothing), advance, cancel.

A step is a tool run (a ``runs`` row with ``workflow_run_id``) that ``services.runs.execute``
runs like any queued tool run, so a step bills, releases its quota and ends exactly as one.
A step is ``pending`` until every step it depends on succeeded; ``advance`` then resolves
its inputs and moves it to ``queued`` with a conditional UPDATE, so when two steps end at
once (in two workers) their shared dependent is queued once. A step that fails or is
canceled fails the workflow: every unfinished step is canceled (its quota released, a
running step's late result discarded, as for a canceled tool run), while the steps that
succeeded keep their output, quota and credits. Every move of the workflow run is
conditional too, so its terminal state never changes and its event is made once.

The caller commits, then enqueues the step runs and emits the event handed back.
"""

from dataclasses import dataclass, field

from flask import current_app
from sqlalchemy import select, update

from catalogue import Workflow, load_catalogue
from catalogue.tool import MAX_FILE_BYTES
from catalogue.workflow import MissingValue, Step
from extensions import db
from models import TERMINAL_STATES, Run, WorkflowRun
from models.base import new_uuid
from services import clock, quota, runs, storage
from services.binary import decode_binary
from services.events import workflow_event
from services.keys import KeyContext
from services.quota import Reservation
from services.runs import Admit, QuotaExceeded

_FAILED = ("failed", "canceled")


class InputRefused(Exception):
    """The workflow input, or a step input made from it, does not fit (a 422)."""

    def __init__(self, errors: dict[str, list[str]]):
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))
        self.errors = errors


@dataclass
class Progress:
    """What a caller does after committing: enqueue ``queued`` step runs, emit ``event``."""

    workflow_run_id: str
    queued: list[str] = field(default_factory=list)
    event: dict | None = None
    key_id: str | None = None


def find_workflow(workflow_id: str) -> Workflow | None:
    return current_app.extensions["workflows"].get(workflow_id)


def store_input(workflow: Workflow, value: str, account_id: int) -> str | dict:
    """The input as runs keep it: its text, or the reference of the file it names (fetched
    or decoded once, now). Raises BinaryInputError (422, or 413 past 25 MiB)."""
    if not workflow.binary_input:
        return value
    accepted = workflow.input.get("x-accept") or [workflow.input["contentMediaType"]]
    blob = decode_binary(value, field="input", max_bytes=MAX_FILE_BYTES, allowed_types=accepted)
    stored = storage.put(blob, account_id=account_id)
    return {"file_id": stored.id, "content_type": stored.content_type, "size": stored.size}


def start(
    context: KeyContext, workflow: Workflow, value: str | dict, *, admit: Admit = runs.reserve_only
) -> tuple[WorkflowRun, Reservation | None]:
    """Create a run of ``workflow`` (``value``: its stored input): its first steps queued
    with their inputs, the others pending. Reserves one call per step (QuotaExceeded when
    they do not all fit; None for sandbox keys); raises InputRefused when a first step's
    inputs do not fit its tool. The caller commits, then enqueues ``queued_steps``."""
    moment = clock.now()
    run = WorkflowRun(
        id=new_uuid(),
        account_id=context.account_id,
        api_key_id=context.key_id,
        workflow_id=workflow.id,
        status="queued",
        sandbox=context.sandbox,
        input=value,
        created_at=moment,
    )
    document = {"input": value, "steps": {}}
    first = {}
    for step in workflow.roots():
        try:
            first[step.id] = step_inputs(step, step.resolve(document))
        except StepInputRefused as refused:
            raise InputRefused({"input": [refused.message]}) from None
    request = (
        None
        if context.sandbox
        else quota.Request(context.key_id, context.daily_quota, len(workflow.steps), moment)
    )
    reservation = admit(context, request)
    if reservation is not None and not reservation.granted:
        raise QuotaExceeded(reservation)
    db.session.add(run)
    db.session.flush()  # the steps' rows refer to it (no ORM relationship orders the inserts)
    for step in workflow.steps:
        db.session.add(
            Run(
                id=new_uuid(),
                account_id=context.account_id,
                api_key_id=context.key_id,
                tool_slug=step.tool,
                workflow_id=workflow.id,
                workflow_run_id=run.id,
                step_id=step.id,
                status="queued" if step.id in first else "pending",
                sandbox=context.sandbox,
                credits=0,
                notify=False,
                input=first.get(step.id, {}),
                created_at=moment,
            )
        )
    db.session.flush()
    return run, reservation


class StepInputRefused(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def step_inputs(step: Step, resolved: dict) -> dict:
    """A step's resolved values as its tool's stored inputs: checked against the tool's
    schema, defaults filled, files as references. Raises StepInputRefused."""
    tool = load_catalogue().get(step.tool)
    files = {}
    for name in tool.binary_inputs:
        if resolved.get(name) is None:
            continue
        reference = _file_reference(resolved[name])
        if reference is None:
            raise StepInputRefused(f"{name}: the value is not a file.")
        files[name] = reference
    errors = tool.validate({**resolved, **{name: "file" for name in files}})
    if errors:
        raise StepInputRefused(
            "; ".join(f"{name or 'input'}: {' '.join(msgs)}" for name, msgs in errors.items())
        )
    return {**tool.with_defaults(resolved), **files}


def _file_reference(value) -> dict | None:
    """A stored file as a run input references it: the workflow's own input file, or a file
    an earlier step made (its output file object)."""
    if isinstance(value, dict) and "file_id" in value:
        return value
    if isinstance(value, dict) and {"id", "content_type", "size"} <= value.keys():
        return {
            "file_id": value["id"],
            "content_type": value["content_type"],
            "size": value["size"],
        }
    return None


def queued_steps(run: WorkflowRun) -> list[str]:
    """The ids of the step runs waiting in the queue (enqueue them after commit)."""
    return [step.id for step in step_runs(run.id) if step.status == "queued"]


def step_runs(workflow_run_id: str) -> list[Run]:
    """The run's steps as stored now (fresh from the database)."""
    return list(
        db.session.scalars(
            select(Run)
            .where(Run.workflow_run_id == workflow_run_id)
            .execution_options(populate_existing=True)
        )
    )


def begin_step(workflow_run_id: str) -> None:
    """A step is about to run: mark its workflow run running (if it was queued). Left to
    the caller's next commit (the step's claim), so a step costs no commit of its own."""
    db.session.execute(
        update(WorkflowRun)
        .where(WorkflowRun.id == workflow_run_id, WorkflowRun.status == "queued")
        .values(status="running", started_at=clock.now())
    )


def advance(workflow_run_id: str) -> Progress:
    """Queue the steps whose dependencies all succeeded, or end the run: failed if a step
    failed or was canceled, succeeded (with its output) once every step succeeded. Safe to
    call at any time and any number of times."""
    progress = Progress(workflow_run_id)
    run = db.session.get(WorkflowRun, workflow_run_id, populate_existing=True)
    if run is None or run.status in TERMINAL_STATES:
        return progress
    workflow = find_workflow(run.workflow_id)
    steps = {step.step_id: step for step in step_runs(run.id)}
    if workflow is None or set(steps) != {step.id for step in workflow.steps}:
        return _fail(run, steps, None, f"The workflow {run.workflow_id} has changed or is gone.")
    broken = next((steps[s.id] for s in workflow.steps if steps[s.id].status in _FAILED), None)
    if broken is not None:
        return _fail(run, steps, broken, _step_message(broken))
    if all(step.status == "succeeded" for step in steps.values()):
        return _complete(run, workflow, steps)
    document = _document(run, steps)
    for step in workflow.steps:
        step_run = steps[step.id]
        if step_run.status != "pending":
            continue
        if any(steps[dep].status != "succeeded" for dep in step.depends_on):
            continue
        try:
            inputs = step_inputs(step, step.resolve(document))
        except (MissingValue, StepInputRefused) as refused:
            runs.fail(step_run, "input", f"The inputs made for this step do not fit: {refused}.")
            return _fail(run, steps, step_run, _step_message(step_run))
        queued = db.session.execute(
            update(Run)
            .where(Run.id == step_run.id, Run.status == "pending")
            .values(status="queued", input=inputs)
        )
        if queued.rowcount == 1:
            progress.queued.append(step_run.id)
    return progress


def cancel(run: WorkflowRun) -> bool:
    """Cancel a run that has not ended: no step starts any more and every unfinished step is
    canceled (quota released); succeeded steps keep theirs. False when it had ended."""
    if not _conclude(run, "canceled"):
        return False
    _cancel_unfinished(step_runs(run.id))
    return True


def _fail(run: WorkflowRun, steps: dict, culprit: Run | None, message: str) -> Progress:
    kind = "canceled" if culprit is not None and culprit.status == "canceled" else "internal"
    error = {**((culprit.error if culprit else None) or {"code": kind}), "message": message}
    if culprit is not None:
        error |= {"step": culprit.step_id, "tool": culprit.tool_slug}
    progress = Progress(run.id)
    if not _conclude(run, "failed", error=error):
        return progress
    _cancel_unfinished(steps.values())
    tool = culprit.tool_slug if culprit is not None else run.workflow_id
    progress.event, progress.key_id = workflow_event(run, run.workflow_id, tool), run.api_key_id
    return progress


def _complete(run: WorkflowRun, workflow: Workflow, steps: dict) -> Progress:
    try:
        output = workflow.resolve_output(_document(run, steps))
    except MissingValue as missing:
        return _fail(run, steps, None, f"The workflow's output {missing.pointer} is missing.")
    progress = Progress(run.id)
    if _conclude(run, "succeeded", output=output):
        progress.event = workflow_event(run, run.workflow_id, workflow.final_step.tool)
        progress.key_id = run.api_key_id
    return progress


def _cancel_unfinished(steps) -> None:
    for step in steps:
        if step.status not in TERMINAL_STATES:
            runs.cancel(step)


def _step_message(step: Run) -> str:
    if step.status == "canceled":
        return f"The step {step.step_id} ({step.tool_slug}) was canceled."
    reason = (step.error or {}).get("message", "it failed")
    return f"The step {step.step_id} ({step.tool_slug}) failed: {reason}"


def _document(run: WorkflowRun, steps: dict) -> dict:
    """What pointers read: the input and the output of every step that succeeded."""
    outputs = {sid: {"output": s.output} for sid, s in steps.items() if s.status == "succeeded"}
    return {"input": run.input, "steps": outputs}


def _conclude(run: WorkflowRun, status: str, **fields) -> bool:
    """Move the run to a terminal state unless it is in one; whether this call moved it."""
    finished_at = clock.now()
    begun = clock.as_utc(run.started_at or run.created_at)
    moved = db.session.execute(
        update(WorkflowRun)
        .where(WorkflowRun.id == run.id, WorkflowRun.status.notin_(TERMINAL_STATES))
        .values(
            status=status,
            finished_at=finished_at,
            duration_ms=int((finished_at - begun).total_seconds() * 1000),
            **fields,
        )
        .execution_options(synchronize_session=False)
    )
    db.session.refresh(run)
    return moved.rowcount == 1
