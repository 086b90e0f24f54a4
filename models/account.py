from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint
from sqlalchemy import false as sa_false
from sqlalchemy.orm import Mapped, mapped_column, relationship
from werkzeug.security import check_password_hash, generate_password_hash

from extensions import db
from models.base import new_uuid, utcnow
from models.plan import Plan

ROLES = ("owner", "admin", "member")


class Account(db.Model):
    """The tenant: one plan, members, keys, runs and usage."""

    __tablename__ = "accounts"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    plan_name: Mapped[str] = mapped_column(ForeignKey("plans.name"))
    # Lifetime count of free calls used (the first 100 calls on a paid plan are free).
    free_calls_used: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Set by an operator: the account's keys answer 401 and its members cannot sign in.
    suspended_at: Mapped[datetime | None]
    suspended_reason: Mapped[str | None] = mapped_column(String(500))

    plan: Mapped[Plan] = relationship(lazy="joined")
    memberships: Mapped[list["Membership"]] = relationship(back_populates="account")


class User(db.Model):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    password_hash: Mapped[str | None] = mapped_column(String(256))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    email_verified_at: Mapped[datetime | None]
    # Operators: /admin/ (flask --app app accounts create ... --admin, accounts set-admin).
    is_admin: Mapped[bool] = mapped_column(default=False, server_default=sa_false())
    # Part of the session's user id (get_id): a new token ends every other session.
    session_token: Mapped[str] = mapped_column(String(32), default="", server_default="")
    last_login_at: Mapped[datetime | None]

    memberships: Mapped[list["Membership"]] = relationship(back_populates="user")

    # The signed-in browser session this user object was loaded for or signed in under
    # (a UserSession's id, never stored here): part of get_id, so of the session cookie and
    # the remember cookie.
    session_id = ""

    def set_password(self, password: str) -> None:
        self.password_hash = generate_password_hash(password)

    def check_password(self, password: str) -> bool:
        return bool(self.password_hash) and check_password_hash(self.password_hash, password)

    # flask-login
    is_active = True
    is_authenticated = True
    is_anonymous = False

    def get_id(self) -> str:
        return f"{self.id}.{self.session_token}.{self.session_id}"


class UserSession(db.Model):
    """One signed-in browser session of a user, live while its row exists: signing out
    deletes it, so a copy of the session's cookies signs no one in afterwards. Only the
    SHA-256 of its id is kept (the id travels in the signed session and remember cookies)."""

    __tablename__ = "user_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Membership(db.Model):
    __tablename__ = "memberships"
    __table_args__ = (UniqueConstraint("account_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    role: Mapped[str] = mapped_column(String(10))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    account: Mapped[Account] = relationship(back_populates="memberships")
    user: Mapped[User] = relationship(back_populates="memberships")


class Invitation(db.Model):
    """An emailed invitation to join an account with a role; only its token's SHA-256 is kept.

    Valid for 7 days from when it was last sent; a pending one holds a seat."""

    __tablename__ = "invitations"
    __table_args__ = (Index("ix_invitations_account", "account_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_uuid)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    email: Mapped[str] = mapped_column(String(320))
    role: Mapped[str] = mapped_column(String(10))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    invited_by_user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL")
    )
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    sent_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]
    accepted_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]

    account: Mapped[Account] = relationship()
    invited_by: Mapped[User | None] = relationship()
