"""People who sign in on the site: sign-up, email verification, authentication, password
reset and change (docs/architecture/accounts.md).

- Passwords are hashed with scrypt (werkzeug's ``generate_password_hash``, whose default it
  is). An unknown email is checked against a dummy hash, so a sign-in takes as long whether
  or not the account exists.
- Verification and reset links carry tokens signed with the app's secret key (itsdangerous),
  with a lifetime: 3 days to verify, 1 hour to reset. A reset token is bound to the password
  hash and session token it was made under, so it works once: the reset changes both.
- ``users.session_token`` is part of the id flask-login keeps in the session
  (``User.get_id``): a new one ends every session of the user but the one that asks for it.
- So is the id of the signed-in session itself (a ``user_sessions`` row, by its SHA-256):
  signing out deletes the row, so a copy of the session or remember cookie taken before
  signs no one in afterwards. A session lasts at most ``SESSION_MAX_DAYS``.
- Sign-up and reset never tell whether an email has an account: the same answer either way
  (an existing account gets a mail saying someone tried to sign up with its address), after
  the same work (the password is hashed on both paths).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache

from flask import current_app
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer
from sqlalchemy import delete, func, select
from werkzeug.security import check_password_hash, generate_password_hash

from extensions import db
from models import Membership, User, UserSession
from services import accounts, clock
from services.mail import send_mail
from services.urls import absolute_url_for

MIN_PASSWORD = 10
MAX_PASSWORD = 256
VERIFY_SECONDS = 3 * 86400
RESET_SECONDS = 3600
# A signed-in session ends this long after it began (the remember cookie's own lifetime).
SESSION_MAX_DAYS = 30
# Checked when the email is unknown, so that the answer takes the time a real check takes.
_DUMMY_HASH = generate_password_hash(secrets.token_urlsafe(16))


class UserRefused(Exception):
    """A sign-up, sign-in or password operation was refused; ``field`` names the form field
    the message belongs beside (None: the form as a whole). The message is safe to show."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class SignedIn:
    user: User
    # The user's memberships in accounts that are not suspended (owner's first).
    memberships: list[Membership]


def check_password(password: str, field: str = "password") -> str:
    if len(password) < MIN_PASSWORD:
        raise UserRefused(f"Use at least {MIN_PASSWORD} characters.", field)
    if len(password) > MAX_PASSWORD:
        raise UserRefused(f"Use at most {MAX_PASSWORD} characters.", field)
    return password


def _email(email: str) -> str:
    try:
        return accounts.normalise_email(email)
    except accounts.AccountRefused:
        raise UserRefused("Enter an email address, like name@example.com.", "email") from None


def find_by_email(email: str) -> User | None:
    return db.session.scalar(select(User).where(func.lower(User.email) == email.strip().lower()))


def sign_up(email: str, password: str) -> None:
    """A new user owning a new free account, and the mail with its verification link; an
    email that has an account gets a mail saying so instead. Same answer either way."""
    email = _email(email)
    check_password(password)
    existing = find_by_email(email)
    if existing is not None:
        # The password is hashed as a new account's would be (the slow part of a sign-up),
        # so that the answer takes as long whether or not the email has an account.
        generate_password_hash(password)
        db.session.rollback()
        send_mail(
            existing.email,
            "You already have an SVC account",
            "Someone (perhaps you) tried to sign up with this address, which already has an "
            "account. Sign in here:\n\n"
            f"{absolute_url_for('site.login')}\n\n"
            "Forgot your password? Reset it here:\n\n"
            f"{absolute_url_for('site.reset_request')}\n\n"
            "If it was not you, you can ignore this mail.",
        )
        return
    account = accounts.create_account(email, "free", password=password)
    user = account.memberships[0].user
    db.session.commit()
    send_verification(user)


def send_verification(user: User) -> None:
    token = _serializer("verify-email").dumps({"u": user.id, "e": user.email})
    send_mail(
        user.email,
        "Confirm your email address for SVC",
        "Welcome to SVC. Confirm your email address to sign in:\n\n"
        f"{absolute_url_for('site.verify_email', token=token)}\n\n"
        "The link works for 3 days. If you did not sign up, ignore this mail.",
    )


def resend_verification(email: str) -> None:
    """Another verification link, to an unverified user (nothing happens otherwise)."""
    user = find_by_email(_email(email))
    if user is not None and user.email_verified_at is None:
        send_verification(user)


def verify_email(token: str) -> User:
    data = _load("verify-email", token, VERIFY_SECONDS, "verification")
    user = db.session.get(User, data.get("u")) if isinstance(data, dict) else None
    if user is None or user.email != data.get("e"):
        raise UserRefused("This verification link is not valid. Sign in to get a new one.")
    if user.email_verified_at is None:
        user.email_verified_at = clock.now()
        db.session.commit()
    return user


def authenticate(email: str, password: str) -> SignedIn:
    """The user with this email and password, verified, with an account that may sign in."""
    refused = UserRefused("That email and password do not match an account.")
    try:
        email = _email(email)
    except UserRefused:
        raise refused from None
    user = find_by_email(email)
    if user is None or not user.password_hash:
        check_password_hash(_DUMMY_HASH, password)
        raise refused
    if not check_password_hash(user.password_hash, password):
        raise refused
    if user.email_verified_at is None:
        send_verification(user)
        raise UserRefused(
            "Confirm your email address first: we have sent you a new link. It works for 3 days."
        )
    memberships = active_memberships(user)
    if not memberships:
        raise UserRefused(
            "Your account is suspended, so you cannot sign in. Contact support to find out why."
        )
    if not user.session_token:
        user.session_token = secrets.token_hex(16)
    user.last_login_at = clock.now()
    db.session.commit()
    return SignedIn(user, memberships)


def active_memberships(user: User) -> list[Membership]:
    """The user's memberships in accounts not suspended: owners' first, then by age."""
    found = [m for m in user.memberships if m.account.suspended_at is None]
    return sorted(found, key=lambda m: (m.role != "owner", m.id))


def request_reset(email: str) -> None:
    """A mail with a reset link to the user with this email, if there is one (the caller
    says the same either way)."""
    user = find_by_email(_email(email))
    if user is None:
        return
    token = _serializer("reset-password").dumps({"u": user.id, "f": _fingerprint(user)})
    send_mail(
        user.email,
        "Reset your SVC password",
        "Someone (perhaps you) asked to reset the password of your SVC account. Choose a new "
        "one here:\n\n"
        f"{absolute_url_for('site.reset_password', token=token)}\n\n"
        "The link works for one hour, once. If it was not you, ignore this mail: your "
        "password stays as it is.",
    )


def user_for_reset(token: str) -> User:
    data = _load("reset-password", token, RESET_SECONDS, "reset")
    user = db.session.get(User, data.get("u")) if isinstance(data, dict) else None
    if user is None or data.get("f") != _fingerprint(user):
        raise UserRefused("This reset link has been used already. Ask for a new one.")
    return user


def reset_password(token: str, password: str) -> User:
    """Set the password a reset link was sent for; every session of the user ends, and the
    link stops working. Following the link proves the address, so it counts as verified."""
    user = user_for_reset(token)
    set_password(user, password)
    if user.email_verified_at is None:
        user.email_verified_at = clock.now()
    db.session.commit()
    return user


def change_password(user: User, current: str, new: str) -> None:
    """Change the password of the signed-in ``user``: its other sessions end (the caller
    signs this one in again under the new session token)."""
    if not (user.password_hash and check_password_hash(user.password_hash, current)):
        raise UserRefused("That is not your current password.", "current_password")
    if current == new:
        raise UserRefused("Choose a password different from the current one.", "new_password")
    set_password(user, new, field="new_password")
    db.session.commit()


def set_password(user: User, password: str, *, field: str = "password") -> None:
    user.password_hash = generate_password_hash(check_password(password, field))
    end_other_sessions(user)


def end_other_sessions(user: User) -> None:
    """Every session of ``user`` but the one it was loaded for ends (a new session token,
    and the other sessions' rows deleted)."""
    user.session_token = secrets.token_hex(16)
    db.session.execute(
        delete(UserSession).where(
            UserSession.user_id == user.id, UserSession.id_hash != _session_hash(user.session_id)
        )
    )


def start_session(user: User) -> None:
    """A new signed-in session for ``user`` (flushed; the caller commits, then hands the
    user to flask-login, whose cookies carry the session's id through ``get_id``). The
    user's sessions past ``SESSION_MAX_DAYS`` are deleted on the way."""
    session_id = secrets.token_urlsafe(24)
    db.session.execute(
        delete(UserSession).where(
            UserSession.user_id == user.id,
            UserSession.created_at < clock.now() - timedelta(days=SESSION_MAX_DAYS),
        )
    )
    db.session.add(UserSession(id_hash=_session_hash(session_id), user_id=user.id))
    db.session.flush()
    user.session_id = session_id


def end_session(user: User) -> None:
    """Sign out the session ``user`` was loaded for: its id signs no one in any more."""
    if user.session_id:
        db.session.execute(
            delete(UserSession).where(UserSession.id_hash == _session_hash(user.session_id))
        )


def check_current_password(user: User, password: str) -> None:
    """For a fresh login: the signed-in user's password again."""
    if not (user.password_hash and check_password_hash(user.password_hash, password)):
        raise UserRefused("That is not your password.", "password")


def load_session_user(user_id: str) -> User | None:
    """flask-login's loader: ``<id>.<session token>.<session id>``; None when the token has
    changed or the session has ended (signed out, or older than ``SESSION_MAX_DAYS``)."""
    number, token, session_id = (user_id.split(".") + ["", ""])[:3]
    if not (number.isdigit() and len(number) < 19 and token and session_id):
        return None
    user = db.session.scalar(
        select(User)
        .join(UserSession, UserSession.user_id == User.id)
        .where(
            User.id == int(number),
            UserSession.id_hash == _session_hash(session_id),
            UserSession.created_at >= clock.now() - timedelta(days=SESSION_MAX_DAYS),
        )
    )
    if user is None or not secrets.compare_digest(user.session_token, token):
        return None
    user.session_id = session_id
    return user


def _session_hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def _fingerprint(user: User) -> str:
    material = f"{user.password_hash or ''}\n{user.session_token}"
    return hashlib.sha256(material.encode()).hexdigest()[:24]


def _serializer(salt: str) -> URLSafeTimedSerializer:
    return _serializer_for(current_app.config["SECRET_KEY"], salt)


@lru_cache(maxsize=8)
def _serializer_for(secret_key: str, salt: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(secret_key, salt=salt)


def _load(salt: str, token: str, max_age: int, what: str):
    try:
        return _serializer(salt).loads(token, max_age=max_age)
    except SignatureExpired:
        raise UserRefused(f"This {what} link has expired. Ask for a new one.") from None
    except BadSignature:
        raise UserRefused(f"This {what} link is not valid. Check it was copied whole.") from None
