"""Runs a member chose to share (``/r/<share id>``): sharing gives a succeeded tool run a
random id of its own, unsharing takes it away (that link then answers 404, and sharing
again makes a new one)."""

from __future__ import annotations

import re
import secrets

from extensions import db
from models import Account, Run

_SHARE_ID = re.compile(r"[A-Za-z0-9_-]{16,43}")


class NotShareable(Exception):
    """Only a succeeded tool run can be shared; the message says why this one cannot."""


def share(run: Run) -> str:
    """Share ``run`` (its share id, the same if it is already shared); flushes."""
    if not isinstance(run, Run):
        raise NotShareable("Workflow runs cannot be shared; share one of its steps.")
    if run.status != "succeeded":
        raise NotShareable("Only a run that succeeded can be shared.")
    if run.share_id is None:
        run.share_id = secrets.token_urlsafe(16)
        db.session.flush()
    return run.share_id


def unshare(run: Run) -> None:
    """Stop sharing ``run``: its link answers 404 from now on; flushes."""
    if isinstance(run, Run) and run.share_id is not None:
        run.share_id = None
        db.session.flush()


def find_shared(share_id: str) -> Run | None:
    """The shared run with this id, or None (unknown, unshared, or its account suspended)."""
    if not _SHARE_ID.fullmatch(share_id or ""):
        return None
    run = db.session.scalar(db.select(Run).where(Run.share_id == share_id))
    if run is None or run.account_id is None or run.status != "succeeded":
        return None
    account = db.session.get(Account, run.account_id)
    if account is None or account.suspended_at is not None:
        return None
    return run
