"""The account's members (``/account/members/``): who is in it, its open invitations and the
seats they take; owners and admins invite, resend, revoke, change roles and remove members,
owners transfer ownership, anyone but the last owner leaves. And the invitation link
(``/account/invitations/<token>``): accept it signed in, or sign up from it.

Every action is a plain form posting here and answering 303 back to the page; a refusal
renders the page again with the message beside its field and the refusal's status.
"""

from __future__ import annotations

from flask import abort, flash, g, make_response, redirect, render_template, request, session
from flask_login import current_user

from blueprints.site.access import member_required, sign_in
from blueprints.site.routes import bp
from extensions import db
from services import clock, users
from services import members as service
from services.mail import MailFailed
from services.members import InvitationInvalid, MemberRefused

_PAGE = "/account/members/"
_MAIL_FAILED = (
    "We could not send the invitation mail just now, so no invitation was made or changed. "
    "Try again in a few minutes."
)


@bp.get("/account/members/")
@member_required()
def members():
    """The account's members, its open invitations and its seats."""
    return _page()


@bp.post("/account/members/invite")
@member_required("owner", "admin")
def invite_member():
    """Invite an address with a role (mailed link, 7 days), within the plan's seats."""
    form = {"email": request.form.get("email", ""), "role": request.form.get("role", "member")}
    try:
        invitation = service.invite(g.membership, form["email"], form["role"])
    except MemberRefused as refused:
        return _refused(refused, form=form)
    except MailFailed:
        db.session.rollback()
        return _page(503, message=_MAIL_FAILED, form=form)
    db.session.commit()
    flash(
        f"Invitation sent to {invitation.email}. Its link works for "
        f"{service.INVITATION_DAYS} days.",
        "success",
    )
    return _back()


@bp.post("/account/members/invitations/<invitation_id>/resend")
@member_required("owner", "admin")
def resend_invitation(invitation_id: str):
    """Mail a new link (7 more days); the old link stops working."""
    try:
        invitation = service.resend(g.membership, invitation_id)
    except MemberRefused as refused:
        return _refused(refused)
    except MailFailed:
        db.session.rollback()
        return _page(503, message=_MAIL_FAILED)
    db.session.commit()
    flash(f"Invitation sent again to {invitation.email}, with a new link.", "success")
    return _back()


@bp.post("/account/members/invitations/<invitation_id>/revoke")
@member_required("owner", "admin")
def revoke_invitation(invitation_id: str):
    """Withdraw an invitation: its link stops working and its seat is free."""
    try:
        invitation = service.revoke(g.membership, invitation_id)
    except MemberRefused as refused:
        return _refused(refused)
    db.session.commit()
    flash(f"The invitation of {invitation.email} is revoked.", "success")
    return _back()


@bp.post("/account/members/<int:member_id>/role")
@member_required("owner", "admin")
def change_member_role(member_id: int):
    """Give a member another role (owners only make or change owners)."""
    try:
        changed = service.change_role(g.membership, member_id, request.form.get("role", ""))
    except MemberRefused as refused:
        return _refused(refused, row=member_id)
    db.session.commit()
    flash(f"{changed.user.email} is now {_with_article(changed.role)}.", "success")
    return _back()


@bp.post("/account/members/<int:member_id>/remove")
@member_required("owner", "admin")
def remove_member(member_id: int):
    """Remove a member from the account."""
    try:
        removed = service.remove(g.membership, member_id)
    except MemberRefused as refused:
        return _refused(refused, row=member_id)
    email, yourself = removed.user.email, removed.user_id == current_user.id
    db.session.commit()
    if yourself:
        return _left()
    flash(f"{email} is no longer a member of {g.account.name}.", "success")
    return _back()


@bp.post("/account/members/transfer")
@member_required("owner")
def transfer_ownership():
    """Make another member the owner; you become an admin."""
    try:
        new_owner = service.transfer_ownership(
            g.membership, request.form.get("member_id", type=int) or 0
        )
    except MemberRefused as refused:
        return _refused(refused)
    db.session.commit()
    flash(f"{new_owner.user.email} is now the owner, and you are an admin.", "success")
    return _back()


@bp.post("/account/members/leave")
@member_required()
def leave_account():
    """Leave the current account (not its last owner)."""
    try:
        service.leave(g.membership)
    except MemberRefused as refused:
        return _refused(refused)
    db.session.commit()
    return _left()


def _left():
    name = g.account.name
    session.pop("account_id", None)  # the next page picks another of the user's accounts
    flash(f"You have left {name}.", "success")
    return redirect("/account/settings", 303)


def _back():
    return redirect(_PAGE, 303)


def _refused(refused: MemberRefused, *, form: dict | None = None, row: int | None = None):
    db.session.rollback()
    if refused.status == 404:
        abort(404)
    errors, message = {}, None
    if refused.field == "role" and row is not None:
        errors[f"role-{row}"] = str(refused)
    elif refused.field and refused.field != "member":  # the transfer's choice: said above it
        errors[refused.field] = str(refused)
    else:
        message = str(refused)
    return _page(
        refused.status, errors=errors, message=message, form=form, more_seats=refused.more_seats
    )


def _page(status: int = 200, **context):
    account, actor = g.account, g.membership
    can_manage = actor.role in ("owner", "admin")
    grantable = service.grantable_roles(actor)
    members = service.members(account.id)
    rows = [
        {
            "id": m.id,
            "email": m.user.email,
            "role": m.role,
            "joined": _day(m.created_at),
            "you": m.id == actor.id,
            "manageable": can_manage and m.id != actor.id and m.role in grantable,
        }
        for m in members
    ]
    now = clock.now()
    invitations = [
        {
            "id": i.id,
            "email": i.email,
            "role": i.role,
            "invited_by": i.invited_by.email if i.invited_by is not None else "an operator",
            "sent": _day(i.sent_at),
            "expired": service.is_expired(i, now),
            "expires_day": _day(i.expires_at),
            "expires_time": clock.as_utc(i.expires_at).strftime("%H:%M UTC"),
            "manageable": can_manage and i.role in grantable,
        }
        for i in service.open_invitations(account.id)
    ]
    owners = sum(1 for m in members if m.role == "owner")
    page = render_template(
        "site/account/members.html",
        rows=rows,
        invitations=invitations,
        seats=service.seats(account),
        more_seats_text=service.more_seats_text(account.plan_name),
        grantable=grantable,
        can_manage=can_manage,
        transfer_to=[r for r in rows if r["role"] != "owner"] if actor.role == "owner" else [],
        last_owner=actor.role == "owner" and owners == 1,
        errors=context.pop("errors", None) or {},
        form=context.pop("form", None) or {},
        **context,
    )
    return make_response(page, status)


def _day(moment) -> str:
    return clock.as_utc(moment).strftime("%Y-%m-%d")


def _with_article(role: str) -> str:
    return f"{'an' if role in ('owner', 'admin') else 'a'} {role}"


# ----------------------------------------------------------------------------- the link


@bp.route("/account/invitations/<token>", methods=["GET", "POST"])
def invitation(token: str):
    """An invitation link: accept it (signed in as the invited address), or sign in or sign
    up with that address first. Expired, withdrawn and used links answer 410, others 400."""
    try:
        found = service.invitation_for_token(token)
    except InvitationInvalid as invalid:
        return _invitation_page(invalid.status, token, invalid=str(invalid))
    if current_user.is_authenticated:
        state = "accept" if current_user.email.lower() == found.email else "other-user"
    else:
        state = "sign-in" if users.find_by_email(found.email) is not None else "sign-up"
    if request.method == "GET":
        return _invitation_page(200, token, found, state)
    action = request.form.get("action")
    if action != state or state not in ("accept", "sign-up"):
        message = "Nothing was done: this page had changed since it was opened. See below."
        return _invitation_page(409, token, found, state, message=message)
    try:
        if state == "accept":
            membership = service.accept(token, current_user)
        else:
            membership = service.sign_up_invited(token, request.form.get("password", ""))
    except MemberRefused as refused:
        db.session.rollback()
        errors = {refused.field: str(refused)} if refused.field else {}
        message = None if refused.field else str(refused)
        status = refused.status
        if isinstance(refused, InvitationInvalid):
            return _invitation_page(status, token, invalid=str(refused))
        return _invitation_page(status, token, found, state, message=message, errors=errors)
    account_id, name, role = membership.account_id, membership.account.name, membership.role
    user = membership.user
    db.session.commit()
    if state == "sign-up":
        sign_in(user)
    session["account_id"] = account_id
    flash(f"You have joined {name} as {_with_article(role)}.", "success")
    return redirect(_PAGE, 303)


def _invitation_page(status: int, token: str, found=None, state=None, **context):
    page = render_template(
        "site/account/invitation.html",
        token=token,
        invitation=found,
        state=state,
        errors=context.pop("errors", None) or {},
        **context,
    )
    return make_response(page, status)
