"""Accounts and their users: what operator commands, the site's sign-up and the operators'
pages (``/admin/``) share."""

import logging
import secrets
from dataclasses import dataclass

from sqlalchemy import func, or_, select
from sqlalchemy.orm import selectinload

from extensions import db
from models import Account, Membership, UsageDaily, User
from services import clock, keys
from services.plans import get_plan

log = logging.getLogger(__name__)
# The longest reason an operator gives for suspending or restoring an account.
MAX_REASON = 500


class AccountRefused(Exception):
    """An account operation was refused; the message is safe to show."""


def normalise_email(email: str) -> str:
    email = email.strip().lower()
    if "@" not in email or email.startswith("@") or email.endswith("@") or " " in email:
        raise AccountRefused(f"{email!r} is not an email address.")
    return email


def create_account(
    email: str,
    plan: str,
    *,
    password: str | None = None,
    name: str | None = None,
    verified: bool = False,
    admin: bool = False,
) -> Account:
    """A new account on ``plan`` owned by a new user ``email`` (``verified``: its address
    needs no confirmation, as when an operator creates it; ``admin``: an operator)."""
    email = normalise_email(email)
    plan_info = get_plan(plan)
    if db.session.scalar(select(User.id).where(User.email == email)) is not None:
        raise AccountRefused(f"A user with the email {email} already exists.")
    user = User(
        email=email,
        email_verified_at=clock.now() if verified else None,
        is_admin=admin,
        session_token=secrets.token_hex(16),
    )
    if password:
        user.set_password(password)
    account = Account(name=name or email.split("@")[0], plan_name=plan_info.name)
    db.session.add_all([user, account])
    db.session.flush()
    db.session.add(Membership(account_id=account.id, user_id=user.id, role="owner"))
    db.session.flush()
    return account


def account_for_email(email: str) -> Account:
    """The account the user ``email`` owns (or else belongs to)."""
    email = normalise_email(email)
    membership = db.session.scalar(
        select(Membership)
        .join(User)
        .where(func.lower(User.email) == email)
        .order_by(Membership.role != "owner", Membership.id)
    )
    if membership is None:
        raise AccountRefused(f"No account has a user with the email {email}.")
    return membership.account


def set_admin(email: str, admin: bool = True) -> User:
    """Make the user ``email`` an operator (``/admin/``), or no longer one."""
    email = normalise_email(email)
    user = db.session.scalar(select(User).where(func.lower(User.email) == email))
    if user is None:
        raise AccountRefused(f"No user has the email {email}.")
    user.is_admin = admin
    return user


def set_plan(email: str, plan: str) -> Account:
    return change_plan(account_for_email(email), plan)


def change_plan(account: Account, plan: str) -> Account:
    """Move ``account`` to ``plan`` (UnknownPlan for another name)."""
    account.plan_name = get_plan(plan).name
    # Every process drops its cached keys of this account within KEY_CACHE_SECONDS;
    # this one drops them now.
    keys.forget()
    return account


# ----------------------------------------------------------------------------- operators


def suspend(account: Account, reason: str, operator: User) -> Account:
    """Suspend ``account``: its keys answer 401 on every process within KEY_CACHE_SECONDS,
    its members cannot sign in, and signed-in sessions lose it at their next request. The
    reason is kept with the account (shown on /admin/) and logged with the operator."""
    reason = _reason(reason)
    if any(m.user_id == operator.id for m in account.memberships):
        raise AccountRefused(
            "You are a member of this account: suspending it would lock you out of it. Ask "
            "another operator."
        )
    if account.suspended_at is None:
        account.suspended_at = clock.now()
        keys.forget()
    account.suspended_reason = reason
    log.warning(
        "operator %s suspended account %s (%s): %s", operator.email, account.id, account.name,
        reason,
    )  # fmt: skip
    return account


def unsuspend(account: Account, reason: str, operator: User) -> Account:
    """Lift the suspension of ``account``: its keys and members work again."""
    reason = _reason(reason)
    if account.suspended_at is not None:
        account.suspended_at = None
        keys.forget()
    account.suspended_reason = None
    log.warning(
        "operator %s lifted the suspension of account %s (%s): %s", operator.email,
        account.id, account.name, reason,
    )  # fmt: skip
    return account


def _reason(reason: str) -> str:
    reason = " ".join((reason or "").split())
    if not reason:
        raise AccountRefused("Give the reason: it goes to the log with your name.")
    if len(reason) > MAX_REASON:
        raise AccountRefused(f"Keep the reason under {MAX_REASON} characters.")
    return reason


def find_accounts(query: str, page: int = 1, per_page: int = 20):
    """Accounts whose id is ``query``, or whose name or a member's email contains it (all
    accounts when it is empty), newest first, a page of ``per_page`` (a Flask-SQLAlchemy
    Pagination of accounts with their members loaded)."""
    statement = (
        select(Account)
        .options(selectinload(Account.memberships).selectinload(Membership.user))
        .order_by(Account.id.desc())
    )
    query = query.strip()
    if query:
        by_email = (
            select(Membership.account_id)
            .join(User, User.id == Membership.user_id)
            .where(User.email.icontains(query, autoescape=True))
        )
        found = [Account.name.icontains(query, autoescape=True), Account.id.in_(by_email)]
        if query.isdigit() and int(query) < 2**31:
            found.append(Account.id == int(query))
        statement = statement.where(or_(*found))
    return db.paginate(statement, page=max(1, page), per_page=per_page, error_out=False)


@dataclass(frozen=True)
class UsageToday:
    api_calls: int = 0
    api_credits: int = 0
    web_calls: int = 0
    web_credits: int = 0


def usage_today(account_id: int) -> UsageToday:
    """Calls and credits of the current UTC day, API and web apart (the daily rollups)."""
    rows = db.session.execute(
        select(UsageDaily.source, func.sum(UsageDaily.calls), func.sum(UsageDaily.credits))
        .where(UsageDaily.account_id == account_id, UsageDaily.day == clock.now().date())
        .group_by(UsageDaily.source)
    )
    figures = {}
    for source, calls, credits in rows:
        if source in ("api", "web"):
            figures[f"{source}_calls"] = int(calls or 0)
            figures[f"{source}_credits"] = int(credits or 0)
    return UsageToday(**figures)
