"""A queued run's reservation between the request that makes it and the commit that
creates its row (``quota.SUBMITTING``): settled once the row is committed, given back when
the commit fails, and given back by a worker's maintenance sweep when the process died in
between (docs/architecture/quota-and-credits.md)."""

import logging
from dataclasses import dataclass

import redis
from flask import current_app
from sqlalchemy import select

from extensions import db
from models import Run, WorkflowRun
from services import quota
from services.keys import KeyContext
from services.quota import Reservation

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Held:
    """A submitted run's reservation (``n`` calls of ``key_id``'s ``day``), kept in
    ``quota.SUBMITTING`` until the transaction creating ``run_id`` commits: a request that
    fails first gives it back, and so does a worker's sweep when its process died first."""

    key_id: str
    n: int
    day: str
    run_id: str


def held_for(context: KeyContext, reservation: Reservation | None, run_id: str, n: int):
    return None if reservation is None else Held(context.key_id, n, reservation.day, run_id)


def commit(held: Held | None) -> None:
    """The edge's one commit of a submitted run (or workflow run): its reservation then
    stands; when the commit fails (the database is down), it is given back before the error
    goes on, so the 503 that follows has charged nothing. What the session loaded stays
    loaded (the rows were just written as they are): the caller answers from them."""
    session = db.session()
    keep, session.expire_on_commit = session.expire_on_commit, False
    try:
        db.session.commit()
    except BaseException:
        give_back(held)
        raise
    finally:
        session.expire_on_commit = keep
    if held is not None:
        try:
            quota.store().settle(held.key_id, held.n, held.day, held.run_id)
        except redis.exceptions.RedisError:  # the sweep finds the run committed
            log.warning("could not settle the reservation of run %s", held.run_id)


def give_back(held: Held | None) -> None:
    """Give ``held`` back, its run not created (at most once; with Redis down, the sweep
    gives it back later)."""
    if held is None:
        return
    try:
        quota.store().release(held.key_id, held.n, held.day, run_id=held.run_id, submitting=True)
    except redis.exceptions.RedisError:
        log.warning("could not give back the reservation of run %s", held.run_id)


def sweep() -> int:
    """Maintenance task: ``release_abandoned`` past ``RUN_SUBMIT_GRACE_SECONDS``."""
    released = release_abandoned(float(current_app.config["RUN_SUBMIT_GRACE_SECONDS"]))
    if released:
        log.warning("gave back %d reservations of submissions whose process died", released)
    return released


def release_abandoned(older_than: float) -> int:
    """Maintenance: give back the reservations of submissions whose process died between
    the reservation and the commit (their run does not exist); a submission whose run was
    committed but not settled is only forgotten. Returns how many were given back."""
    store = quota.store()
    found = store.abandoned_submissions(older_than)
    if not found:
        return 0
    ids = [run_id for run_id, _member in found]
    committed = set(db.session.scalars(select(Run.id).where(Run.id.in_(ids))))
    committed |= set(db.session.scalars(select(WorkflowRun.id).where(WorkflowRun.id.in_(ids))))
    db.session.rollback()  # a read: end its transaction
    for run_id, member in found:
        if run_id in committed:
            store.forget_member(member)
        else:
            store.release_member(member)
    return len(found) - len(committed & set(ids))
