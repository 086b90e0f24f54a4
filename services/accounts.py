"""Accounts and their users: what operator commands and the site's sign-up share."""

import secrets

from sqlalchemy import func, select

from extensions import db
from models import Account, Membership, User
from services import clock, keys
from services.plans import get_plan


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
    account = account_for_email(email)
    account.plan_name = get_plan(plan).name
    # Every process drops its cached keys of this account within KEY_CACHE_SECONDS;
    # this one drops them now.
    keys.forget()
    return account
