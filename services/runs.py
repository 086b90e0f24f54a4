"""Tool runs: reserve quota, run the engine, record the run and its credits.

Light tools run inline: their run and usage rows go to the recorder (written in batches).
Queued runs (``submit`` then the job's ``execute``) are rows that move through
``queued → running → succeeded | failed | canceled``; every move is a conditional update,
so a terminal state never changes and a late result of a canceled or timed-out run is
discarded. A failed or canceled run gives its quota reservation back and costs no credits.
The caller (view or job) commits once afterwards.
"""

import logging
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime

from flask import current_app
from sqlalchemy import bindparam, select, update
from sqlalchemy.orm.attributes import set_committed_value

from catalogue import Tool, load_catalogue
from engines import ProviderUnavailable, get_engine, models_noted, run_tool
from engines.base import text_written_to
from engines.models import local_llm
from extensions import db
from models import Account, Run
from models.base import new_uuid
from services import allowance, clock, queue, quota, tool_files, usage, usage_rollup
from services.allowance import Visitor
from services.keys import KeyContext
from services.quota import Reservation
from services.recorder import RunJournal, ledger_rows, recorder, run_rows, write_in_session
from services.run_ends import classify, conclude, error_record
from services.run_events import STEP_STARTED, step_event, text_writer
from services.submissions import Held, give_back, held_for

log = logging.getLogger(__name__)


class QuotaExceeded(Exception):
    def __init__(self, reservation: Reservation):
        super().__init__("daily quota exhausted")
        self.reservation = reservation


class RunFailed(Exception):
    """The run was recorded as failed; ``kind`` is input, provider, model_unfit or internal
    (``FAILURE_STATUS``)."""

    def __init__(
        self, run: "Run | InlineRun", kind: str, message: str, retry_after: int | None = None
    ):
        super().__init__(message)
        self.run = run
        self.kind = kind
        self.message = message
        self.retry_after = retry_after


@dataclass(frozen=True)
class RunResult:
    run: "Run | InlineRun"
    reservation: Reservation | None
    # A queued run's reservation, in flight until its run is committed (``submissions.commit``).
    held: "Held | None" = None


# Makes a run's quota reservation (None: nothing to reserve, for sandbox keys). The API
# passes one that also spends the request's per-minute hit in the same round trip.
Admit = Callable[[KeyContext, quota.Request | None], Reservation | None]


def reserve_only(context: KeyContext, reserve: quota.Request | None) -> Reservation | None:
    """The plain admission: just the reservation."""
    if reserve is None:
        return None
    return quota.store().reserve(
        reserve.key_id, reserve.limit, reserve.n, reserve.moment, reserve.credits,
        reserve.run_id, reserve.journal, reserve.submitting,
    )  # fmt: skip


def _reserve(
    context: KeyContext,
    moment: datetime,
    credits: int,
    admit: Admit,
    run_id: str | None = None,
    journal: bytes | None = None,
    submitting: bool = False,
) -> Reservation | None:
    """Reserve one call (QuotaExceeded); for an inline run, ``run_id`` keeps the reservation
    in flight until the run is journaled or released (services/quota.py), and ``journal``
    (a run that has run: its rows) journals them with the reservation instead; for a queued
    run (``submitting``), until its row is committed (``submissions.commit``)."""
    request = (
        None
        if context.sandbox
        else quota.Request(
            context.key_id, context.daily_quota, 1, moment, credits, run_id, journal, submitting
        )
    )
    reservation = admit(context, request)
    if reservation is not None and not reservation.granted:
        raise QuotaExceeded(reservation)
    return reservation


def _new_run(
    context: KeyContext, tool: Tool, inputs: dict, status: str, moment, run_id: str | None = None
) -> Run:
    return Run(
        id=run_id or new_uuid(),
        account_id=context.account_id,
        api_key_id=context.key_id,
        tool_slug=tool.slug,
        status=status,
        sandbox=context.sandbox,
        credits=0,
        notify=False,
        input=inputs,
        created_at=moment,
    )


@dataclass
class InlineRun:
    """A light tool's run as its request holds it: answered from memory, its ``runs`` row
    written later by the recorder. (An ORM object cost more to build than the tool.)"""

    id: str
    account_id: int
    api_key_id: str
    tool_slug: str
    sandbox: bool
    input: dict
    created_at: datetime
    started_at: datetime
    status: str = "running"
    output: dict | None = None
    error: dict | None = None
    credits: int = 0
    finished_at: datetime | None = None
    duration_ms: int | None = None
    source: str = "api"
    visitor_id: str | None = None
    web_device: str | None = None
    web_address: str | None = None
    user_id: int | None = None
    embed_id: str | None = None
    model: str | None = None

    def row(self) -> dict:
        """Its ``runs`` row."""
        return {**_NOT_A_STEP, **self.__dict__}


_NOT_A_STEP = {"workflow_id": None, "workflow_run_id": None, "step_id": None, "notify": False}


def run_inline(
    context: KeyContext,
    tool: Tool,
    inputs: dict,
    *,
    admit: Admit = reserve_only,
    admit_after_run: bool = False,
    embed_id: str | None = None,
    address: str | None = None,
    source: str = "api",
) -> RunResult:
    """Run a light tool in the request. Raises QuotaExceeded or RunFailed. ``source``: the
    entry point on the run's record (``api`` or ``mcp``).

    ``embed_id``: the run of an agency's widget (``source`` embed) through the widget's key,
    charged as the key's API runs are; ``address`` is the salted hash of the visitor's
    address that the widget's per-visitor cap counts (services/embeds.py).

    Admitted first, then run, then journaled: two Redis round trips. ``admit_after_run``
    (the caller saw room under the key's limits: blueprints/api/pipeline/keys.py) runs it first
    and journals its rows with the admission, in one round trip where the run journal and
    the key's reservation live in the same Redis; a refused run's work is then lost, which
    is why it is only done with room to spare. Either way the call is counted and the rows
    journaled in one atomic step, or neither."""
    moment = clock.now()
    run = InlineRun(
        new_uuid(), context.account_id, context.key_id, tool.slug, context.sandbox, inputs,
        created_at=moment, started_at=moment, source=source,
    )  # fmt: skip
    if embed_id is not None:
        run.source, run.embed_id, run.web_address = "embed", embed_id, address
    if (
        admit_after_run
        and not tool.makes_files  # a refused run would leave its files behind
        and not context.sandbox
        and not usage.likely_free(context)
        and recorder().journal is not None
    ):
        return _run_then_admit(context, tool, inputs, run, admit)
    guessed_credits = 0 if usage.likely_free(context) else tool.credits
    reservation = _reserve(context, moment, guessed_credits, admit, run.id)
    started = time.perf_counter()
    try:
        output = tool.sample_output() if context.sandbox else _run_engine(tool, inputs, run)
    except Exception as error:
        raise _failed(context, run, started, error, reservation, guessed_credits) from error
    _finish(run, started, "succeeded", output=output)
    if reservation is None:
        recorder().record(run.row())
        return RunResult(run, reservation)
    free = False
    if usage.likely_free(context):
        free = usage.claim_free_call(context.account_id)
        # Committed before the run is journaled: were the commit to fail, the caller is
        # answered 503 and the run must not be recorded (its reservation, still in flight,
        # is given back by the journal's maintenance).
        end_transaction()
    run.credits = 0 if free else credits_for(tool, output)
    if run.credits != guessed_credits:
        quota.store().add_credits(context.key_id, run.credits - guessed_credits, reservation.day)
    ledger = usage.ledger_row(
        context.account_id, context.key_id, tool.slug, run.id, run.credits, free, moment,
        run.source,
    )  # fmt: skip
    in_flight = quota.inflight_member(
        run.id, quota.usage_key(context.key_id, reservation.day), 1, guessed_credits
    )
    recorder().record(run.row(), ledger, in_flight=in_flight)
    return RunResult(run, reservation)


def _run_then_admit(
    context: KeyContext, tool: Tool, inputs: dict, run: InlineRun, admit: Admit
) -> RunResult:
    """``run_inline`` run first: its rows go to the journal with its reservation."""
    started = time.perf_counter()
    try:
        output = _run_engine(tool, inputs, run)
    except Exception as error:
        # A failed run is not counted, but is answered as one admitted first would be:
        # the key's limits (429) before the failure.
        reservation = _reserve(context, run.created_at, tool.credits, admit, run.id)
        raise _failed(context, run, started, error, reservation, tool.credits) from error
    _finish(run, started, "succeeded", output=output)
    run.credits = credits_for(tool, output)
    ledger = usage.ledger_row(
        context.account_id, context.key_id, tool.slug, run.id, run.credits, False,
        run.created_at, run.source,
    )  # fmt: skip
    rows = run_rows(run.row(), ledger)
    reservation = _reserve(
        context, run.created_at, run.credits, admit, journal=RunJournal.payload(rows)
    )
    if reservation.entry is not None:
        recorder().journaled(reservation.entry, rows)
    else:  # a quota store that journals nothing (none does today): journal on its own
        recorder().record(run.row(), ledger)
    return RunResult(run, reservation)


def _failed(
    context: KeyContext | None,
    run: InlineRun,
    started: float,
    error: Exception,
    reservation: Reservation | None,
    credits: int,
) -> RunFailed:
    """Give an inline run's reservation back and record it as failed; the error to raise."""
    if reservation is not None:
        quota.store().release(context.key_id, 1, reservation.day, credits, run.id)
    kind, message, retry_after = classify(error)
    _finish(run, started, "failed", error=error_record(kind, message, retry_after))
    recorder().record(run.row())
    return RunFailed(run, kind, message, retry_after)


# --- the site's runs ---------------------------------------------------------------------


def run_for_visitor(
    visitor: Visitor, tool: Tool, inputs: dict, ticket: allowance.Ticket
) -> RunResult:
    """Run a light tool for a visitor of the site, in the request, its run reserved against
    the visitor's web allowance (``ticket``: ``allowance.reserve``) and given back if it
    fails (RunFailed). No key, no quota, no credits: the allowance is what it costs."""
    moment = clock.now()
    run = InlineRun(
        new_uuid(), visitor.account_id, None, tool.slug, False, inputs,
        created_at=moment, started_at=moment,
        source="web", visitor_id=visitor.id, web_device=visitor.device,
        web_address=visitor.address, user_id=visitor.user_id,
    )  # fmt: skip
    started = time.perf_counter()
    try:
        output = _run_engine(tool, inputs, run)
    except Exception as error:
        allowance.release(ticket)
        raise _failed(None, run, started, error, None, 0) from error
    _finish(run, started, "succeeded", output=output)
    recorder().record(run.row())
    return RunResult(run, None)


def submit_for_visitor(visitor: Visitor, tool: Tool, inputs: dict) -> Run:
    """A queued run for a visitor of the site, its run reserved against the visitor's web
    allowance (given back when the run fails or is canceled: ``run_ends.conclude``); the caller
    commits, then enqueues it on the web queue."""
    run = Run(
        id=new_uuid(),
        account_id=visitor.account_id,
        api_key_id=None,
        tool_slug=tool.slug,
        status="queued",
        sandbox=False,
        credits=0,
        notify=False,
        input=inputs,
        created_at=clock.now(),
        source="web",
        visitor_id=visitor.id,
        web_device=visitor.device,
        web_address=visitor.address,
        user_id=visitor.user_id,
    )
    db.session.add(run)
    db.session.flush()
    return run


# --- queued runs ------------------------------------------------------------------------


def submit(
    context: KeyContext,
    tool: Tool,
    inputs: dict,
    *,
    notify: bool,
    admit: Admit = reserve_only,
    embed_id: str | None = None,
    address: str | None = None,
    source: str = "api",
) -> RunResult:
    """Create a queued run with its quota reserved (QuotaExceeded); the caller commits with
    ``submissions.commit(result.held)``, then enqueues. ``notify``: nobody will wait for it, so
    its end is to be announced by an event. ``embed_id`` and ``address``: an agency's
    widget's run, as ``run_inline`` takes them."""
    moment, run_id = clock.now(), new_uuid()
    reservation = _reserve(context, moment, 0, admit, run_id=run_id, submitting=True)
    held = held_for(context, reservation, run_id, 1)
    try:
        run = _new_run(context, tool, inputs, "queued", moment, run_id)
        run.notify, run.source = notify, source
        if embed_id is not None:
            run.source, run.embed_id, run.web_address = "embed", embed_id, address
        db.session.add(run)
        db.session.flush()
    except BaseException:
        give_back(held)
        raise
    return RunResult(run, reservation, held)


def execute(run_id: str, *, before_end: Callable[[], object] | None = None) -> Run | None:
    """The job's work: run a queued run to its end. Returns the run, or None when this call
    did not end it: it was canceled (or taken by another worker) before it started, or it
    ended meanwhile (canceled, or failed by the sweep), its late result discarded; its end
    was then announced by whoever ended it.

    The claim is committed before the engine works; the end is left to the caller's commit.
    ``before_end`` is called just before the end is written, in the transaction that writes
    it: a workflow step locks its workflow run there, so that the step's end and the advance
    it leads to are one transaction."""
    claimed = _claim(run_id)
    if claimed is None:
        return None
    run, free_calls_used = claimed
    if run.workflow_run_id is not None:
        step_event(run, STEP_STARTED)
    started = time.perf_counter()
    try:
        tool = find_tool(run.tool_slug)
        if tool is None:
            raise ProviderUnavailable(f"The tool {run.tool_slug} is no longer available.")
        output = tool.sample_output() if run.sandbox else _run_engine(tool, run.input, run)
    except Exception as error:
        kind, message, retry_after = classify(error)
        if before_end is not None:
            before_end()
        error = error_record(kind, message, retry_after)
        ended = conclude(run, started, "failed", error=error, model=run.model)
        return run if ended else None
    if before_end is not None:
        before_end()
    credits, free = 0, False
    # The site's tool runs cost allowance only; a workflow's steps are charged wherever it was
    # started (one started on the site: to its account, with no key).
    charged = not run.sandbox and (run.source != "web" or run.workflow_run_id is not None)
    if charged:
        # The count only grows: an account past its free calls needs no claim.
        free = free_calls_used < usage.FREE_CALLS and usage.claim_free_call(run.account_id)
        credits = 0 if free else credits_for(tool, output)
    if not conclude(run, started, "succeeded", output=output, credits=credits, model=run.model):
        return None
    if charged:
        if run.api_key_id is not None:
            quota.store().add_credits(run.api_key_id, credits, clock.utc_day(run.created_at))
        ledger = usage.ledger_row(
            run.account_id, run.api_key_id, tool.slug, run.id, credits, free, clock.now(),
            run.source,
        )  # fmt: skip
        write_in_session(ledger_rows(ledger))
    elif run.source == "web" and run.account_id is not None:
        usage_rollup.add_web_run(db.session, run)
    return run


# The run's account's count of free calls used, read where the claim writes.
_FREE_CALLS_USED = (
    select(Account.free_calls_used).where(Account.id == Run.account_id).scalar_subquery()
)


# The claim (its parameters: the run's id and the time it starts). Built once: building it
# for each run cost more CPU than the database's work.
_CLAIM = (
    update(Run)
    .where(Run.id == bindparam("claimed_id"), Run.status == "queued")
    .values(status="running", started_at=bindparam("claimed_at"))
    .returning(Run, _FREE_CALLS_USED)
    .execution_options(populate_existing=True, synchronize_session=False)
)


def _claim(run_id: str) -> tuple[Run, int] | None:
    """Move a queued run to running, committed; with its account's count of free calls
    used. None when it is not queued (canceled, or taken by another worker)."""
    session = db.session()
    if not session.in_transaction():
        # The claim is one statement: let it commit itself (no BEGIN and COMMIT to wait for).
        session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
    claimed = session.execute(_CLAIM, {"claimed_id": run_id, "claimed_at": clock.now()}).first()
    end_transaction()
    return None if claimed is None else tuple(claimed)


def find_tool(slug: str) -> Tool | None:
    """The tool a run names: a catalogue tool, or the tool behind one of the plan-gated
    endpoints (docs/architecture/plan-gated-endpoints.md), which the API registers in
    ``app.extensions["endpoint_tools"]``."""
    return load_catalogue().get(slug) or current_app.extensions["endpoint_tools"].get(slug)


def queue_for(tool: Tool, *, site: bool = False) -> str:
    """The queue of a queued run of ``tool``: an I/O queue when its engine waits on the
    network (a model provider), else a compute queue; the site's own when ``site``."""
    return queue.queue_for(get_engine(tool.engine).waits_on_network(), site=site)


def credits_for(tool: Tool, output: dict) -> int:
    """The credits of a successful run: the tool's price, once per unit its engine counts
    in the output (one for most tools; per image or per chapter for some)."""
    return tool.credits * get_engine(tool.engine).billed_units(output)


# What a result written by the embedded model says of itself wherever it is shown (the API's
# ``quality_note``, the site's pages with a run's output): a small model's answer, not a
# provider's.
EMBEDDED_MODEL_NOTE = (
    "Written by the small model built into this service ({model}), not by an AI provider: "
    "it was checked, but it can still be wrong, so check it before you rely on it. A "
    "configured provider writes much better answers."
)


def quality_note(model: str | None) -> str | None:
    """The note a run's result carries when the embedded model wrote (some of) it, from the
    run's ``model`` (the names of the models that answered, comma-separated); None when only
    providers' models answered, or the tool runs no model. Without it, nobody could tell a
    small model's answer from a provider's: both runs succeed alike."""
    if not model:
        return None
    embedded = local_llm.model_name()
    if embedded not in (name.strip() for name in model.split(",")):
        return None
    return EMBEDDED_MODEL_NOTE.format(model=embedded)


def _run_engine(tool: Tool, inputs: dict, run: "Run | InlineRun") -> dict:
    """The engine's output for stored inputs, its files stored and answered as URLs. The
    models that answered, if any, are set on ``run.model`` (failed or not), for its end to
    write (a queued run's is not flushed: ``run_ends.conclude`` writes it, conditionally)."""
    loaded = tool_files.load_inputs(tool, inputs)
    account_id, run_id = run.account_id, run.id
    end_transaction()
    # A queued run's followers read its text as the model writes it (an inline run is over
    # before anyone could follow it).
    written = None if isinstance(run, InlineRun) else text_writer(run)
    with models_noted() as models, text_written_to(written) if written else nullcontext():
        try:
            output = run_tool(tool, loaded)
        finally:
            if written is not None:
                written.close()
            model = ", ".join(models) or None
            if isinstance(run, InlineRun):
                run.model = model
            else:
                set_committed_value(run, "model", model)
    return tool_files.store_outputs(output, account_id=account_id, run_id=run_id)


def end_transaction() -> None:
    """Commit the session's transaction, if one is open, keeping what was loaded.

    Before an engine works (minutes, for some): an idle transaction would hold its locks,
    and keep a migration or a TRUNCATE waiting, all that time. What was loaded stays
    loaded: reading it again after the engine would cost a query, and the run's end is a
    conditional update that never trusts it."""
    if not db.session.registry.has():  # an inline run of a text tool: no session at all
        return
    session = db.session()
    if not session.in_transaction():
        return
    keep, session.expire_on_commit = session.expire_on_commit, False
    try:
        session.commit()
    finally:
        session.expire_on_commit = keep


def _finish(run: InlineRun, started: float, status: str, **fields) -> None:
    run.status = status
    run.finished_at = clock.now()
    run.duration_ms = int((time.perf_counter() - started) * 1000)
    for name, value in fields.items():
        setattr(run, name, value)
