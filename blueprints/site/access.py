"""Who may open an account page: signed in, a member of the current account with a role,
and, for revealing or rolling keys and secrets, signed in within the last 10 minutes.

The current account is the one chosen in the account switcher (``session["account_id"]``),
else the user's first: an account they own, else the oldest membership. A suspended account
is never current (docs/architecture/accounts.md#roles).
"""

from __future__ import annotations

import time
from functools import wraps
from urllib.parse import urlsplit

from flask import abort, current_app, g, redirect, request, session, url_for
from flask_login import current_user, login_user, logout_user

from extensions import db
from models import ROLES, Membership, User
from services import urls, users
from services.users import active_memberships

# A fresh login: the password given within this many seconds.
FRESH_SECONDS = 600
_RANK = {role: rank for rank, role in enumerate(reversed(ROLES))}  # member 0 … owner 2

__all__ = [
    "FRESH_SECONDS",
    "ROLES",
    "fresh_login_required",
    "is_fresh",
    "mark_fresh",
    "may_be_signed_in",
    "member_required",
    "role_at_least",
    "safe_next",
    "sign_in",
    "sign_out",
]


def may_be_signed_in() -> bool:
    """Whether this request can have a signed-in user, asked without loading one: its
    session holds a user, or it brings a remember cookie (flask-login loads from either).
    The pages every anonymous visitor sees skip flask-login's loading with it."""
    cookie = current_app.config.get("REMEMBER_COOKIE_NAME", "remember_token")
    return "_user_id" in session or cookie in request.cookies


def role_at_least(membership: Membership, role: str) -> bool:
    return _RANK[membership.role] >= _RANK[role]


def member_required(*roles: str):
    """Signed in (else to the login page), a member of the current account, with one of
    ``roles`` if any are given (else a 403 page). Sets ``g.account`` and ``g.membership``."""
    unknown = set(roles) - set(ROLES)
    if unknown:
        raise ValueError(f"unknown roles {sorted(unknown)}")

    def decorator(view):
        @wraps(view)
        def wrapped(*args, **kwargs):
            if not current_user.is_authenticated:
                return redirect(url_for("site.login", next=request.full_path.rstrip("?")))
            membership = current_membership()
            if membership is None:
                abort(403, "Your accounts are suspended: there is nothing to show here.")
            if roles and membership.role not in roles:
                wanted = " or ".join(roles)
                abort(403, f"Only an {wanted} of {membership.account.name} can do this.")
            return view(*args, **kwargs)

        wrapped.member_roles = roles or ROLES  # read by the security tests' table
        return wrapped

    return decorator


def current_membership() -> Membership | None:
    """The signed-in user's membership in the current account (and ``g``'s account)."""
    if "membership" in g:
        return g.membership
    memberships = active_memberships(current_user)
    chosen = session.get("account_id")
    membership = next((m for m in memberships if m.account_id == chosen), None)
    if membership is None and memberships:
        membership = memberships[0]
        session["account_id"] = membership.account_id
    g.membership = membership
    g.memberships = memberships
    g.account = membership.account if membership is not None else None
    return membership


def sign_in(user: User, *, remember: bool = False) -> None:
    """Sign ``user`` in to a new session of this browser (its own ``user_sessions`` row,
    committed): nothing of the session before carries over (session fixation)."""
    session.clear()
    users.start_session(user)
    db.session.commit()
    login_user(user, remember=remember)
    mark_fresh()


def sign_out() -> None:
    """End this browser's session on the server too: its cookies sign no one in again."""
    if current_user.is_authenticated:
        users.end_session(current_user._get_current_object())
        db.session.commit()
    logout_user()
    session.clear()


def mark_fresh() -> None:
    session["login_at"] = int(time.time())


def is_fresh() -> bool:
    return time.time() - session.get("login_at", 0) < FRESH_SECONDS


def fresh_login_required(view):
    """Under ``member_required``: the password was given within the last 10 minutes, else
    to the page that asks for it again (and back here)."""

    @wraps(view)
    def wrapped(*args, **kwargs):
        if not is_fresh():
            target = request.full_path.rstrip("?")
            if request.method != "GET":  # after the password, come back to the page
                target = request.referrer if _same_site(request.referrer) else "/account/"
            response = redirect(url_for("site.reauth", next=target))
            if request.headers.get("HX-Request"):
                response.headers["HX-Redirect"] = response.location
            return response
        return view(*args, **kwargs)

    wrapped.needs_fresh_login = True  # read by the security tests' table
    return wrapped


def safe_next(target: str | None, default: str) -> str:
    """``next`` when it is a path on this site (never another host: an open redirect)."""
    return target if _same_site(target) else default


def _same_site(target: str | None) -> bool:
    if not target:
        return False
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        own = urlsplit(urls.base_url())
        return (parts.scheme, parts.netloc) == (own.scheme, own.netloc)
    return target.startswith("/") and not target.startswith("//") and "\\" not in target
