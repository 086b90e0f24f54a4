"""Workflow runs: start (one quota call per step, all or nothing), advance, cancel.

A step is a tool run (a ``runs`` row with ``workflow_run_id``) that ``services.runs.execute``
runs like any queued tool run, so a step bills, releases its quota and ends exactly as one.
A step is ``pending`` until every step it depends on succeeded; ``advance`` then resolves
its inputs and moves it to ``queued`` with a conditional UPDATE. A step's end and that
advance are one transaction under the workflow run's lock (``lock``), so when two steps end
at once (in two workers) their shared dependent is queued once, never zero times. A step
that fails or is canceled fails the workflow: every unfinished step is canceled (its quota
released, a running step's late result discarded, as for a canceled tool run), while the
steps that succeeded keep their output, quota and credits. Every move of the workflow run is
conditional too, so its terminal state never changes and its event is made once.

The caller commits, then enqueues the step runs and emits the event handed back.
"""

from dataclasses import dataclass, field
from datetime import datetime

from flask import current_app
from sqlalchemy import select, update

from catalogue import Workflow, load_catalogue
from catalogue.tool import MAX_FILE_BYTES
from catalogue.workflow import MissingValue, Step
from extensions import db
from models import TERMINAL_STATES, Account, Run, WorkflowRun
from models.base import new_uuid
from services import clock, quota, run_ends, runs, storage, submissions
from services.binary import decode_binary
from services.events import workflow_event
from services.keys import KeyContext
from services.plans import PlanInfo
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
    context: KeyContext,
    workflow: Workflow,
    value: str | dict,
    *,
    admit: Admit = runs.reserve_only,
    user_id: int | None = None,
    source: str = "api",
) -> tuple[WorkflowRun, Reservation | None, submissions.Held | None]:
    """Create a run of ``workflow`` (``value``: its stored input): its first steps queued
    with their inputs, the others pending. Reserves one call per step (QuotaExceeded when
    they do not all fit; None for sandbox keys), held until the caller commits with
    ``submissions.commit``; raises InputRefused when a first step's inputs do not fit
    its tool. The caller commits, then enqueues ``queued_steps``.

    A run started on the site by a member of the account (``user_id``; ``context`` from
    ``member_context``, with no key) belongs to the account: its steps are web runs of that
    user, charged credits as the API's are, against no key's quota. Otherwise its steps are
    runs of ``source`` (``api``, or ``mcp`` for one started by the MCP endpoint)."""
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
    steps = len(workflow.steps)
    request = (
        None
        if context.sandbox
        else quota.Request(
            context.key_id, context.daily_quota, steps, moment, run_id=run.id, submitting=True
        )
    )
    reservation = admit(context, request)
    if reservation is not None and not reservation.granted:
        raise QuotaExceeded(reservation)
    held = submissions.held_for(context, reservation, run.id, steps)
    try:
        _add_run_and_steps(run, workflow, context, first, moment, user_id, source)
    except BaseException:
        submissions.give_back(held)
        raise
    return run, reservation, held


def _add_run_and_steps(
    run: WorkflowRun,
    workflow: Workflow,
    context: KeyContext,
    first: dict,
    moment: datetime,
    user_id: int | None,
    source: str,
) -> None:
    """The workflow run's row and its steps' rows (queued: those in ``first``), flushed."""
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
                source=source if user_id is None else "web",
                user_id=user_id,
            )
        )
    db.session.flush()


def member_context(account: Account, plan: PlanInfo) -> KeyContext:
    """What ``start`` needs of a run started on the site by a member of ``account``: no key,
    so no quota to reserve (pro and above run without a daily limit on the site) and no
    webhook; credits and free calls are the account's."""
    return KeyContext(
        key_id=None, key_hash="", name="", hint="", sandbox=False, created_at=account.created_at,
        last_used_at=None, account_id=account.id, account_name=account.name,
        free_calls_used=account.free_calls_used, plan=plan, per_minute=plan.per_minute,
        daily_quota=0,
    )  # fmt: skip


def no_reservation(context: KeyContext, request: quota.Request | None) -> None:
    """The admission of a run with no key: nothing to reserve."""
    return None


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
    """A first step is about to run: mark its workflow run running (if it was queued). Left
    to the caller's next commit (the step's claim), so a step costs no commit of its own."""
    db.session.execute(
        update(WorkflowRun)
        .where(WorkflowRun.id == workflow_run_id, WorkflowRun.status == "queued")
        .values(status="running", started_at=clock.now())
    )


@dataclass(frozen=True)
class StepState:
    """What advancing reads of a step (plain values: every step's end reads them all)."""

    id: str
    step_id: str
    tool_slug: str
    status: str
    output: dict | None
    error: dict | None


@dataclass
class Held:
    """A workflow run as ``lock`` read it, with its steps."""

    id: str
    status: str
    workflow_id: str
    input: str | dict
    steps: dict[str, StepState]

    def ended(self, step: Run) -> None:
        """Note the end of a step that this transaction wrote after the lock read it."""
        self.steps[step.step_id] = StepState(
            step.id, step.step_id, step.tool_slug, step.status, step.output, step.error
        )


_RUNS, _WORKFLOW_RUNS = Run.__table__, WorkflowRun.__table__
_STEP_FIELDS = ("id", "step_id", "tool_slug", "status", "output", "error")
_STEPS = select(*(_RUNS.c[name] for name in _STEP_FIELDS))


def lock(workflow_run_id: str) -> Held | None:
    """The workflow run and its steps as stored now, the run locked until the transaction
    ends. Whatever moves a workflow run or its steps takes this lock first (``advance``, a
    step's end in ``jobs.workflows``; ``cancel`` by its first update), so two steps ending
    at once in two workers advance one after the other: the second sees the first's end,
    and their shared dependent is queued once, never zero times. None when there is no
    such run.

    The lock is an update that changes nothing: on PostgreSQL it takes the row's lock, on
    SQLite the database's write lock (a read would not: it is not part of the transaction
    there). The steps are read after it, by a statement of their own: one that waited for
    the lock would see the rows it joins as they were before it waited."""
    row = db.session.execute(
        update(_WORKFLOW_RUNS)
        .where(_WORKFLOW_RUNS.c.id == workflow_run_id)
        .values(status=_WORKFLOW_RUNS.c.status)
        .returning(_WORKFLOW_RUNS.c.status, _WORKFLOW_RUNS.c.workflow_id, _WORKFLOW_RUNS.c.input)
    ).first()
    if row is None:
        return None
    steps = db.session.execute(_STEPS.where(_RUNS.c.workflow_run_id == workflow_run_id))
    return Held(
        workflow_run_id,
        row.status,
        row.workflow_id,
        row.input,
        {step.step_id: StepState(*step) for step in steps},
    )


def advance(workflow_run_id: str, *, held: Held | None = None) -> Progress:
    """Queue the steps whose dependencies all succeeded, or end the run: failed if a step
    failed or was canceled, succeeded (with its output) once every step succeeded. Safe to
    call at any time and any number of times. ``held``: what ``lock`` gave the caller's
    transaction (which holds the lock), with the ends it wrote since."""
    progress = Progress(workflow_run_id)
    held = held or lock(workflow_run_id)
    if held is None or held.status in TERMINAL_STATES:
        return progress
    workflow = find_workflow(held.workflow_id)
    steps = held.steps
    if workflow is None or set(steps) != {step.id for step in workflow.steps}:
        return _fail(held, None, f"The workflow {held.workflow_id} has changed or is gone.")
    broken = next((steps[s.id] for s in workflow.steps if steps[s.id].status in _FAILED), None)
    if broken is not None:
        return _fail(held, broken.id, _step_message(broken))
    if all(step.status == "succeeded" for step in steps.values()):
        return _complete(held, workflow)
    document = _document(held)
    for step in workflow.steps:
        step_run = steps[step.id]
        if step_run.status != "pending":
            continue
        if any(steps[dep].status != "succeeded" for dep in step.depends_on):
            continue
        try:
            inputs = step_inputs(step, step.resolve(document))
        except (MissingValue, StepInputRefused) as refused:
            culprit = db.session.get(Run, step_run.id)
            run_ends.fail(culprit, "input", f"The inputs made for this step do not fit: {refused}.")
            return _fail(held, culprit.id, _step_message(culprit))
        queued = db.session.execute(
            update(_RUNS)
            .where(_RUNS.c.id == step_run.id, _RUNS.c.status == "pending")
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


def _fail(held: Held, culprit_id: str | None, message: str) -> Progress:
    """Fail the run because of the step run ``culprit_id`` (None: the workflow itself) and
    cancel its unfinished steps; the steps that succeeded keep what they made."""
    run = db.session.get(WorkflowRun, held.id)
    steps = step_runs(run.id)
    culprit = next((step for step in steps if step.id == culprit_id), None)
    kind = "canceled" if culprit is not None and culprit.status == "canceled" else "internal"
    error = {**((culprit.error if culprit else None) or {"code": kind}), "message": message}
    if culprit is not None:
        error |= {"step": culprit.step_id, "tool": culprit.tool_slug}
    progress = Progress(run.id)
    if not _conclude(run, "failed", error=error):
        return progress
    _cancel_unfinished(steps)
    tool = culprit.tool_slug if culprit is not None else run.workflow_id
    progress.event, progress.key_id = workflow_event(run, run.workflow_id, tool), run.api_key_id
    return progress


def _complete(held: Held, workflow: Workflow) -> Progress:
    try:
        output = workflow.resolve_output(_document(held))
    except MissingValue as missing:
        return _fail(held, None, f"The workflow's output {missing.pointer} is missing.")
    run = db.session.get(WorkflowRun, held.id)
    progress = Progress(run.id)
    if _conclude(run, "succeeded", output=output):
        progress.event = workflow_event(run, run.workflow_id, workflow.final_step.tool)
        progress.key_id = run.api_key_id
    return progress


def _cancel_unfinished(steps) -> None:
    for step in steps:
        if step.status not in TERMINAL_STATES:
            run_ends.cancel(step)


def _step_message(step: Run | StepState) -> str:
    if step.status == "canceled":
        return f"The step {step.step_id} ({step.tool_slug}) was canceled."
    reason = (step.error or {}).get("message", "it failed")
    return f"The step {step.step_id} ({step.tool_slug}) failed: {reason}"


def _document(held: Held) -> dict:
    """What pointers read: the input and the output of every step that succeeded."""
    outputs = {
        sid: {"output": step.output}
        for sid, step in held.steps.items()
        if step.status == "succeeded"
    }
    return {"input": held.input, "steps": outputs}


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
