"""Starting runs: the one path every entry point takes (the API's run endpoints and its
plan-gated endpoints, the MCP endpoint, the site's tool pages, agency widgets, workflows).

A light tool runs in the request (``services.runs.run_inline``); any other run is created
``queued`` with its reservation held, committed (``services.submissions.commit``: a failed
commit gives the reservation back), and only then enqueued on the queue its tool's engine
calls for (``jobs.runs.enqueue_run``). Whoever waits for a queued run waits here, bounded:
when the wait runs out, the run goes on and its end is announced by its webhook event
(docs/architecture/runs.md). The entry points keep only what is theirs: how they read
inputs, what they answer and how they say a refusal.
"""

from __future__ import annotations

from dataclasses import dataclass

from catalogue import Tool, Workflow
from extensions import db
from jobs.runs import enqueue_run
from jobs.workflows import enqueue_step
from models import Run, WorkflowRun
from services import allowance, embeds, run_ends, runs, submissions, workflows
from services.allowance import Visitor
from services.keys import KeyContext
from services.queue import dispatcher
from services.quota import Reservation
from services.runs import Admit, InlineRun


@dataclass(frozen=True)
class Started:
    """A run started for a key: ``run`` ended (``finished``: an inline run, which is not in
    the database yet) or queued; ``reservation`` is what it counted against the key's day
    (None for sandbox keys)."""

    run: Run | InlineRun
    reservation: Reservation | None
    finished: bool


def start_for_key(
    context: KeyContext,
    tool: Tool,
    inputs: dict,
    *,
    queued: bool,
    awaited: bool,
    announce: bool,
    admit: Admit = runs.reserve_only,
    admit_after_run: bool = False,
    source: str = "api",
) -> Started:
    """Start ``tool`` on checked ``inputs`` for a key. ``queued``: the caller asks for a
    queued run even of a light tool (``Prefer: respond-async``); a tool with a queue is
    always queued, a sandbox key's run never is (it answers its tool's sample). ``awaited``:
    the caller will wait for its end (``wait``); ``announce``: nobody will follow it, so its
    end is announced by its webhook event. ``source`` names the entry point on the run's
    record.

    Raises ``runs.QuotaExceeded`` (nothing held) and ``runs.RunFailed`` (an inline run that
    failed: recorded, its reservation given back, the session committed)."""
    if context.sandbox or not (tool.queue or queued):
        try:
            result = runs.run_inline(
                context, tool, inputs, admit=admit, admit_after_run=admit_after_run,
                source=source,
            )  # fmt: skip
        except runs.RunFailed:
            db.session.commit()
            raise
        runs.end_transaction()  # the claim of a free call, if one was made
        return Started(result.run, result.reservation, finished=True)
    result = runs.submit(context, tool, inputs, notify=announce, admit=admit, source=source)
    submissions.commit(result.held)
    enqueue_run(result.run.id, tool, awaited=awaited)
    return Started(result.run, result.reservation, finished=False)


def wait(run_id: str, seconds: float) -> bool:
    """Wait up to ``seconds`` for a queued run started ``awaited`` to end: True when it has
    ended. When the wait runs out and the run is still going, its end will be announced by
    its webhook event instead (False); one that ended meanwhile counts as ended."""
    finished = dispatcher().wait(run_id, seconds) or not run_ends.mark_waiter_gone(run_id)
    db.session.commit()
    return finished


def stop_waiting(run_id: str) -> bool:
    """The caller stops waiting early (its client went away): as ``wait`` running out."""
    finished = not run_ends.mark_waiter_gone(run_id)
    db.session.commit()
    return finished


def queue_for_visitor(visitor: Visitor, tool: Tool, stored: dict, ticket) -> Run:
    """Queue a site visitor's run of ``tool`` (its inputs ``stored``), held by the visitor's
    allowance ``ticket``, which is given back when the run cannot be created."""
    try:
        run = runs.submit_for_visitor(visitor, tool, stored)
        db.session.commit()
    except BaseException:
        db.session.rollback()
        allowance.release(ticket)
        raise
    enqueue_run(run.id, tool, site=True)
    return run


def queue_for_widget(widget: embeds.Live, stored: dict, visitor: str, ticket) -> Run:
    """Queue an agency widget's run through its key (``embeds.submit``: raises
    ``embed_caps.CapReached`` when the key's day is used up)."""
    run = embeds.submit(widget, stored, visitor, ticket)
    enqueue_run(run.id, widget.tool)
    return run


def start_workflow(
    context: KeyContext,
    workflow: Workflow,
    value: str | dict,
    *,
    admit: Admit = runs.reserve_only,
    user_id: int | None = None,
    source: str = "api",
) -> tuple[WorkflowRun, Reservation | None]:
    """Start a run of ``workflow`` on its stored input ``value`` (``workflows.start``: one
    call reserved per step), committed, its first steps enqueued. Raises
    ``workflows.InputRefused`` and ``runs.QuotaExceeded``."""
    run, reservation, held = workflows.start(
        context, workflow, value, admit=admit, user_id=user_id, source=source
    )
    queued = workflows.queued_steps(run)
    submissions.commit(held)
    for step_run_id in queued:
        enqueue_step(step_run_id, run.id, first=True)
    return run, reservation
