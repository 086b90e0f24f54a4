"""An account's members and the invitations to join it (docs/architecture/accounts.md).

- Roles: owner (plan, members, everything), admin (keys, webhooks, members), member (runs
  tools, sees usage, makes and manages its own keys). Owners and admins invite, resend and
  revoke invitations, change roles and remove members; only an owner makes or changes owners
  and transfers ownership. The last owner can neither leave nor lose the role.
- Seats (the plan's: Business 10, Agency 25, every other plan 1) hold the members and the
  pending invitations; an invitation past them is refused. Accepting checks the members
  against the seats again (the plan may have changed since the invitation was sent).
- An invitation is a mailed link carrying a random token of which only the SHA-256 is kept,
  valid 7 days from when it was last sent; resending makes a new token, so the old link
  stops working.
- Every user belongs to at least one account: someone who signs up from an invitation joins
  the inviting account and gets no account of their own, and a user who leaves (or is removed
  from) their last account gets a free account of their own, as a sign-up would.

Functions take the acting membership and ids, add and flush; the caller commits (and rolls
back on ``MemberRefused``).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import joinedload

from extensions import db
from models import ROLES, Account, Invitation, Membership, User
from services import accounts, clock, users
from services.mail import send_mail
from services.plans import all_plans, get_plan
from services.urls import absolute_url_for

INVITATION_DAYS = 7
_RANK = {role: rank for rank, role in enumerate(ROLES)}  # owner first


class MemberRefused(Exception):
    """A member or invitation action was refused; the message is safe to show. ``field``
    names the form field it belongs beside (None: the form as a whole), ``status`` the HTTP
    status of the answer, ``more_seats`` that the answer should point at plans with more
    seats."""

    def __init__(
        self,
        message: str,
        field: str | None = None,
        status: int = 422,
        *,
        more_seats: bool = False,
    ):
        super().__init__(message)
        self.field = field
        self.status = status
        self.more_seats = more_seats


class InvitationInvalid(MemberRefused):
    """An invitation link that cannot be used: 400 (not one of ours) or 410 (expired,
    withdrawn, used)."""


@dataclass(frozen=True)
class Seats:
    total: int
    members: int
    pending: int

    @property
    def used(self) -> int:
        return self.members + self.pending

    @property
    def free(self) -> int:
        return max(0, self.total - self.used)


# ----------------------------------------------------------------------------- reading


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def members(account_id: int) -> list[Membership]:
    """The account's members with their users: owners, then admins, then members, each by
    when they joined."""
    found = db.session.scalars(
        select(Membership)
        .options(joinedload(Membership.user))
        .where(Membership.account_id == account_id)
        .order_by(Membership.created_at, Membership.id)
    ).all()
    return sorted(found, key=lambda m: _RANK[m.role])


def open_invitations(account_id: int) -> list[Invitation]:
    """Invitations neither accepted nor revoked, newest first: the pending ones and those
    that expired (which hold no seat, and can be sent again)."""
    return list(
        db.session.scalars(
            select(Invitation)
            .options(joinedload(Invitation.invited_by))
            .where(
                Invitation.account_id == account_id,
                Invitation.accepted_at.is_(None),
                Invitation.revoked_at.is_(None),
            )
            .order_by(Invitation.created_at.desc(), Invitation.id)
        )
    )


def is_expired(invitation: Invitation, now: datetime | None = None) -> bool:
    return clock.as_utc(invitation.expires_at) <= (now or clock.now())


def seats(account: Account) -> Seats:
    member_count = db.session.scalar(
        select(func.count(Membership.id)).where(Membership.account_id == account.id)
    )
    pending = db.session.scalar(
        select(func.count(Invitation.id)).where(
            Invitation.account_id == account.id,
            Invitation.accepted_at.is_(None),
            Invitation.revoked_at.is_(None),
            Invitation.expires_at > clock.now(),
        )
    )
    return Seats(get_plan(account.plan_name).seats, member_count, pending)


def grantable_roles(actor: Membership) -> tuple[str, ...]:
    """The roles ``actor`` may give: an owner any, an admin admin or member, a member none."""
    if actor.role == "owner":
        return ROLES
    if actor.role == "admin":
        return ("admin", "member")
    return ()


def more_seats_text(plan_name: str) -> str:
    """The plans with more seats than ``plan_name``'s, as "Business (10 seats), Agency (25
    seats)"."""
    current = get_plan(plan_name).seats
    bigger = [p for p in all_plans().values() if p.seats > current]
    return ", ".join(f"{p.name.capitalize()} ({p.seats} seats)" for p in bigger)


# ----------------------------------------------------------------------------- inviting


def invite(actor: Membership, email: str, role: str) -> Invitation:
    """Invite ``email`` to ``actor``'s account with ``role`` and mail the link (MailFailed
    when the mail cannot be sent: the caller rolls back, so nothing is kept)."""
    _require_manager(actor)
    try:
        email = accounts.normalise_email(email)
    except accounts.AccountRefused:
        raise MemberRefused("Enter an email address, like name@example.com.", "email") from None
    if len(email) > 320:
        raise MemberRefused("An email address has at most 320 characters.", "email")
    _check_grantable(actor, role)
    account = _lock_account(actor.account_id)
    if _membership_of_email(account.id, email) is not None:
        raise MemberRefused(f"{email} is a member of this account already.", "email", 409)
    now = clock.now()
    earlier = [i for i in open_invitations(account.id) if i.email == email]
    if any(not is_expired(i, now) for i in earlier):
        raise MemberRefused(
            f"{email} has been invited already: resend that invitation below to mail its "
            "link again.",
            "email",
            409,
        )
    for expired in earlier:  # replaced by this one
        expired.revoked_at = now
    _check_a_seat_is_free(account)
    invitation = Invitation(
        account_id=account.id,
        email=email,
        role=role,
        invited_by_user_id=actor.user_id,
        created_at=now,
        token_hash="",
        expires_at=now,
    )
    db.session.add(invitation)
    _send(invitation, actor.user)
    return invitation


def resend(actor: Membership, invitation_id: str) -> Invitation:
    """Mail the invitation again with a new link, valid 7 days from now (the old link stops
    working). An expired invitation takes a seat again, so it needs a free one."""
    _require_manager(actor)
    account = _lock_account(actor.account_id)
    invitation = find_invitation(account.id, invitation_id)
    _check_grantable(actor, invitation.role)
    if is_expired(invitation):
        _check_a_seat_is_free(account)
    _send(invitation, actor.user)
    return invitation


def revoke(actor: Membership, invitation_id: str) -> Invitation:
    """Withdraw a pending (or expired) invitation: its link stops working, its seat is free."""
    _require_manager(actor)
    invitation = find_invitation(actor.account_id, invitation_id)
    _check_grantable(actor, invitation.role)
    invitation.revoked_at = clock.now()
    return invitation


def find_invitation(account_id: int, invitation_id: str) -> Invitation:
    """The account's open invitation ``invitation_id``; 404 for another account's, an
    accepted or a revoked one (as if it did not exist)."""
    invitation = db.session.get(Invitation, invitation_id) if len(invitation_id) <= 36 else None
    if (
        invitation is None
        or invitation.account_id != account_id
        or invitation.accepted_at is not None
        or invitation.revoked_at is not None
    ):
        raise MemberRefused("There is no such invitation in this account.", status=404)
    return invitation


def _send(invitation: Invitation, sender: User) -> None:
    """A new token (the previous link stops working), 7 more days, and the mail."""
    token = secrets.token_urlsafe(32)
    now = clock.now()
    invitation.token_hash = hash_token(token)
    invitation.sent_at = now
    invitation.expires_at = now + timedelta(days=INVITATION_DAYS)
    db.session.flush()
    account = db.session.get(Account, invitation.account_id)
    article = "an" if invitation.role in ("owner", "admin") else "a"
    send_mail(
        invitation.email,
        f"{sender.email} invited you to {account.name} on SVC",
        f"{sender.email} invited you to join the account {account.name} on SVC as "
        f"{article} {invitation.role}.\n\n"
        "Accept the invitation here (you can sign up with this address if you have no SVC "
        "login yet):\n\n"
        f"{absolute_url_for('site.invitation', token=token)}\n\n"
        f"The link works for {INVITATION_DAYS} days. If you did not expect this mail, you can "
        "ignore it.",
    )


# ----------------------------------------------------------------------------- accepting


def invitation_for_token(token: str) -> Invitation:
    """The invitation a link's token belongs to, while it can be accepted; InvitationInvalid
    (400: not a link of ours, or one replaced by a newer mail; 410: expired, withdrawn,
    used) otherwise."""
    invitation = None
    if 20 <= len(token) <= 100:
        invitation = db.session.scalar(
            select(Invitation).where(Invitation.token_hash == hash_token(token))
        )
    if invitation is None:
        raise InvitationInvalid(
            "This invitation link is not valid. Check that it was copied whole; if the "
            "invitation was sent again, only the newest mail's link works.",
            status=400,
        )
    if invitation.accepted_at is not None:
        raise InvitationInvalid(
            "This invitation has been accepted already: sign in to open the account.",
            status=410,
        )
    if invitation.revoked_at is not None:
        raise InvitationInvalid(
            "This invitation was withdrawn. Ask whoever invited you to send a new one.",
            status=410,
        )
    if is_expired(invitation):
        day = clock.as_utc(invitation.expires_at).strftime("%Y-%m-%d")
        raise InvitationInvalid(
            f"This invitation expired on {day} (links work for {INVITATION_DAYS} days). Ask "
            "whoever invited you to send it again.",
            status=410,
        )
    return invitation


def accept(token: str, user: User) -> Membership:
    """``user`` (signed in with the invited address) joins the account with the invited
    role, if a seat is free for them now."""
    invitation = invitation_for_token(token)
    if user.email.lower() != invitation.email:
        raise MemberRefused(
            f"This invitation is for {invitation.email}, and you are signed in as {user.email}.",
            status=403,
        )
    account = _lock_account(invitation.account_id)
    if account.suspended_at is not None:
        raise InvitationInvalid(
            f"The account {account.name} is suspended, so its invitations cannot be accepted.",
            status=410,
        )
    membership = _membership_of_email(account.id, invitation.email)
    if membership is None:
        taken = seats(account)
        if taken.members >= taken.total:
            raise MemberRefused(
                f"{account.name} has no free seat now: its {account.plan_name.capitalize()} "
                f"plan has {_seat_count(taken.total)} and all are taken by members. Ask whoever "
                "invited you to free a seat or to move to a plan with more seats.",
                status=409,
            )
        membership = Membership(account_id=account.id, user_id=user.id, role=invitation.role)
        membership.user = user
        db.session.add(membership)
    invitation.accepted_at = clock.now()
    db.session.flush()
    return membership


def sign_up_invited(token: str, password: str) -> Membership:
    """A new user with the invited address (confirmed: the link came to it) and
    ``password``, joining the inviting account, with no account of its own."""
    invitation = invitation_for_token(token)
    try:
        users.check_password(password)
    except users.UserRefused as refused:
        raise MemberRefused(str(refused), refused.field) from None
    if users.find_by_email(invitation.email) is not None:
        raise MemberRefused(
            f"{invitation.email} has a login already: sign in to accept.", status=409
        )
    user = User(email=invitation.email, email_verified_at=clock.now())
    users.set_password(user, password)
    db.session.add(user)
    try:
        db.session.flush()
    except IntegrityError:  # the same address signed up a moment ago
        raise MemberRefused(
            f"{invitation.email} has a login already: sign in to accept.", status=409
        ) from None
    return accept(token, user)


# ----------------------------------------------------------------------------- members


def change_role(actor: Membership, member_id: int, role: str) -> Membership:
    _require_manager(actor)
    target = find_member(actor.account_id, member_id)
    if role not in ROLES:
        raise MemberRefused(f"Choose a role: {', '.join(ROLES)}.", "role")
    if actor.role != "owner" and "owner" in (role, target.role):
        raise MemberRefused("Only an owner can make or change owners.", "role", 403)
    if target.role == "owner" and role != "owner":
        _keep_an_owner(target, "give up the owner role")
    target.role = role
    return target


def remove(actor: Membership, member_id: int) -> Membership:
    """Remove a member (removing yourself is leaving)."""
    _require_manager(actor)
    target = find_member(actor.account_id, member_id)
    if target.id == actor.id:
        return leave(actor)
    if actor.role != "owner" and target.role == "owner":
        raise MemberRefused("Only an owner can remove an owner.", status=403)
    _keep_an_owner(target, "be removed")
    return _delete(target)


def leave(membership: Membership) -> Membership:
    _keep_an_owner(membership, "leave")
    return _delete(membership)


def transfer_ownership(actor: Membership, member_id: int) -> Membership:
    """``member_id`` becomes an owner and ``actor`` (an owner) an admin."""
    if actor.role != "owner":
        raise MemberRefused("Only an owner can transfer ownership.", status=403)
    target = find_member(actor.account_id, member_id)
    if target.id == actor.id:
        raise MemberRefused("Choose another member to transfer ownership to.", "member")
    if target.role == "owner":
        raise MemberRefused(f"{target.user.email} is an owner already.", "member", 409)
    target.role = "owner"
    actor.role = "admin"
    return target


def find_member(account_id: int, member_id: int) -> Membership:
    """The account's membership ``member_id``; 404 for another account's."""
    membership = db.session.get(Membership, member_id)
    if membership is None or membership.account_id != account_id:
        raise MemberRefused("There is no such member in this account.", status=404)
    return membership


def _keep_an_owner(membership: Membership, doing: str) -> None:
    if membership.role != "owner":
        return
    owners = db.session.scalar(
        select(func.count(Membership.id)).where(
            Membership.account_id == membership.account_id, Membership.role == "owner"
        )
    )
    if owners <= 1:
        raise MemberRefused(
            f"The last owner of an account cannot {doing}: first transfer ownership to "
            "another member, or make another member an owner.",
            status=409,
        )


def _delete(membership: Membership) -> Membership:
    user = membership.user
    db.session.delete(membership)
    db.session.flush()
    left = db.session.scalar(select(func.count(Membership.id)).where(Membership.user_id == user.id))
    if not left:  # every user keeps an account: a free one of their own, as a sign-up has
        account = Account(name=user.email.split("@")[0], plan_name="free")
        db.session.add(account)
        db.session.flush()
        db.session.add(Membership(account_id=account.id, user_id=user.id, role="owner"))
        db.session.flush()
    db.session.expire(user, ["memberships"])
    return membership


# ----------------------------------------------------------------------------- helpers


def _require_manager(actor: Membership) -> None:
    if actor.role not in ("owner", "admin"):
        raise MemberRefused("Only an owner or admin can manage members.", status=403)


def _check_grantable(actor: Membership, role: str) -> None:
    if role not in ROLES:
        raise MemberRefused(f"Choose a role: {', '.join(grantable_roles(actor))}.", "role")
    if role not in grantable_roles(actor):
        raise MemberRefused("Only an owner can invite owners.", "role", 403)


def _check_a_seat_is_free(account: Account) -> None:
    taken = seats(account)
    if taken.used >= taken.total:
        more = more_seats_text(account.plan_name)
        raise MemberRefused(
            f"All {_seat_count(taken.total)} of the {account.plan_name.capitalize()} plan are "
            f"taken ({taken.members} member{'s' if taken.members != 1 else ''}, "
            f"{taken.pending} pending invitation{'s' if taken.pending != 1 else ''}). Revoke an "
            "invitation or remove a member to free one"
            + (f", or move to a plan with more seats: {more}." if more else "."),
            "email",
            409,
            more_seats=bool(more),
        )


def _seat_count(total: int) -> str:
    return f"{total} seat{'s' if total != 1 else ''}"


def _lock_account(account_id: int) -> Account:
    """The account row, locked until the transaction ends (PostgreSQL), so that two
    invitations or acceptances at once cannot both take the last seat."""
    return db.session.scalars(
        select(Account)
        .where(Account.id == account_id)
        .with_for_update(of=Account)
        .execution_options(populate_existing=True)
    ).one()


def _membership_of_email(account_id: int, email: str) -> Membership | None:
    return db.session.scalar(
        select(Membership)
        .join(User, User.id == Membership.user_id)
        .where(Membership.account_id == account_id, func.lower(User.email) == email.lower())
    )
