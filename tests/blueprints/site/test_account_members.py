"""The members page and invitations: every action through the pages, the seats, roles on
every action, the last owner, ownership transfer, and the invitation mails received by a
real SMTP server with their links followed."""

import re
import time
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from extensions import db
from models import Account, Invitation, Membership, User
from services import accounts, clock
from services.members import hash_token
from tests.blueprints.site.conftest import PASSWORD
from tests.blueprints.site.test_account_auth import (
    browser,
    forget_request_state,
    log_in,
    path_of,
    post,
)

PAGE = "/account/members/"
REFERER = "https://svc.test/account/members/"


def act(client, path: str, data: dict | None = None):
    """A form of the members page, posted with the page's CSRF token."""
    client.environ_base["HTTP_REFERER"] = REFERER
    return post(client, path, data or {}, page=PAGE)


def page_of(client) -> str:
    forget_request_state()
    answer = client.get(PAGE)
    assert answer.status_code == 200, answer.status_code
    return answer.get_data(as_text=True)


def join(account: Account, role: str = "member", email: str | None = None) -> Membership:
    """A verified user with ``PASSWORD`` added to ``account`` with ``role``."""
    user = User(
        email=email or f"joined{time.monotonic_ns()}@example.com",
        email_verified_at=clock.now(),
        session_token=f"{time.monotonic_ns():032x}"[-32:],
    )
    user.set_password(PASSWORD)
    db.session.add(user)
    db.session.flush()
    membership = Membership(account_id=account.id, user_id=user.id, role=role)
    db.session.add(membership)
    db.session.commit()
    return membership


def invitation_link(mailbox, email: str, count: int = 1) -> str:
    """The link of the ``count``-th invitation mail to ``email`` (waiting for it)."""
    deadline = time.monotonic() + 10
    while len(mailbox.to(email)) < count:
        assert time.monotonic() < deadline, f"no invitation mail {count} to {email}"
        time.sleep(0.05)
    mail = mailbox.to(email)[count - 1]
    assert "invited you to" in mail.subject
    (link,) = [link for link in mail.links if "/account/invitations/" in link]
    assert link.startswith("https://svc.test/account/invitations/")
    return path_of(link)


def invite(client, email: str, role: str = "member"):
    return act(client, "/account/members/invite", {"email": email, "role": role})


def membership_of(account_id: int, email: str) -> Membership | None:
    db.session.expire_all()
    return db.session.scalar(
        select(Membership)
        .join(User)
        .where(Membership.account_id == account_id, User.email == email)
    )


def open_invitations(account_id: int) -> list[Invitation]:
    db.session.expire_all()
    return db.session.scalars(
        select(Invitation).where(
            Invitation.account_id == account_id,
            Invitation.accepted_at.is_(None),
            Invitation.revoked_at.is_(None),
        )
    ).all()


# --------------------------------------------------------------------------- the page


def test_everyone_sees_the_members_and_invitations_and_only_managers_the_controls(
    app, sign_in, client
):
    owner = sign_in(plan="business")
    member = join(owner.account, "member", "plain@example.com")
    assert invite(client, "new@example.com").status_code == 303
    html = page_of(client)
    for text in (owner.user.email, "plain@example.com", "new@example.com", "2 members"):
        assert text in html, text
    assert "3 of 10 seats used" in html and "1 pending invitation" in html
    assert 'action="/account/members/invite"' in html and "/remove" in html

    other = browser(app, "198.51.100.31")
    assert log_in(other, member.user.email).status_code == 302
    html = page_of(other)
    assert owner.user.email in html and "new@example.com" in html
    for control in ("/account/members/invite", "/remove", "/role", "/resend", "/revoke"):
        assert control not in html, control
    assert 'action="/account/members/leave"' in html


def test_the_page_asks_to_sign_in_first(app):
    answer = browser(app).get(PAGE)
    assert answer.status_code == 302 and answer.location == f"/account/login?next={PAGE}"


# --------------------------------------------------------------------------- invitations


def test_an_invitation_is_mailed_and_accepted_by_the_invited_user(app, mailbox, sign_in, client):
    owner = sign_in(plan="business")
    # The invitee has a login and a free account of their own.
    accounts.create_account("invitee@example.com", "free", password=PASSWORD, verified=True)
    db.session.commit()
    sign_in_again = browser(app, "198.51.100.32")
    assert log_in(sign_in_again, "invitee@example.com").status_code == 302
    answer = invite(client, "Invitee@Example.com", "admin")
    assert answer.status_code == 303 and answer.location == PAGE
    assert "Invitation sent to invitee@example.com" in page_of(client)
    path = invitation_link(mailbox, "invitee@example.com")
    mail = mailbox.to("invitee@example.com")[0]
    assert owner.user.email in mail.text and owner.account.name in mail.text
    assert "7 days" in mail.text
    token = path.rsplit("/", 1)[1]
    (stored,) = open_invitations(owner.account.id)
    assert stored.token_hash == hash_token(token)
    assert abs(clock.as_utc(stored.expires_at) - clock.now() - timedelta(days=7)) < timedelta(
        seconds=10
    )

    forget_request_state()
    shown = sign_in_again.get(path)
    html = shown.get_data(as_text=True)
    assert shown.status_code == 200 and "Accept the invitation" in html
    assert owner.account.name in html and "admin" in html
    accepted = post(sign_in_again, path, {"action": "accept"})
    assert accepted.status_code == 303 and accepted.location == PAGE
    joined = membership_of(owner.account.id, "invitee@example.com")
    assert joined is not None and joined.role == "admin"
    assert open_invitations(owner.account.id) == []
    # The switcher has moved to the account joined.
    html = page_of(sign_in_again)
    assert f"You have joined {owner.account.name} as an admin" in html
    assert f"<strong>{owner.account.name}</strong>" in html
    with sign_in_again.session_transaction() as session:
        assert session["account_id"] == owner.account.id
    # The link is used now.
    forget_request_state()
    used = sign_in_again.get(path)
    assert used.status_code == 410 and "accepted already" in used.get_data(as_text=True)


def test_signing_up_from_an_invitation(app, mailbox, sign_in, client):
    owner = sign_in(plan="business")
    assert invite(client, "brand-new@example.com").status_code == 303
    path = invitation_link(mailbox, "brand-new@example.com")
    visitor = browser(app, "198.51.100.34")
    visitor.environ_base["HTTP_REFERER"] = "https://svc.test" + path
    forget_request_state()
    html = visitor.get(path).get_data(as_text=True)
    assert "Create login and join" in html and "brand-new@example.com" in html
    short = post(visitor, path, {"action": "sign-up", "password": "short"})
    assert short.status_code == 422
    assert 'id="f-password-error"' in short.get_data(as_text=True)
    assert db.session.scalar(select(User.id).where(User.email == "brand-new@example.com")) is None
    done = post(visitor, path, {"action": "sign-up", "password": PASSWORD})
    assert done.status_code == 303 and done.location == PAGE
    user = db.session.scalar(select(User).where(User.email == "brand-new@example.com"))
    # The link came to the address: confirmed. No account of their own: the team's only.
    assert user.email_verified_at is not None
    assert [(m.account_id, m.role) for m in user.memberships] == [(owner.account.id, "member")]
    assert "You have joined" in page_of(visitor)
    # Signed in; and the password works on the sign-in page.
    assert log_in(browser(app, "198.51.100.35"), user.email).status_code == 302


def test_a_signed_out_visitor_with_a_login_is_sent_to_sign_in_and_back(
    app, mailbox, sign_in, client
):
    owner = sign_in(plan="business")
    accounts.create_account("has-login@example.com", "free", password=PASSWORD, verified=True)
    db.session.commit()
    assert invite(client, "has-login@example.com").status_code == 303
    path = invitation_link(mailbox, "has-login@example.com")
    visitor = browser(app, "198.51.100.36")
    forget_request_state()
    html = visitor.get(path).get_data(as_text=True)
    assert f'href="/account/login?next={path}"' in html and "Create login" not in html
    # A sign-up post does nothing for an address with a login.
    refused = post(
        visitor, path, {"action": "sign-up", "password": PASSWORD}, page="/account/login"
    )
    assert refused.status_code == 409
    signed = log_in(visitor, "has-login@example.com", next=path)
    assert signed.status_code == 302 and signed.location == path
    accepted = post(visitor, path, {"action": "accept"})
    assert accepted.status_code == 303
    assert membership_of(owner.account.id, "has-login@example.com").role == "member"


def test_someone_else_signed_in_is_told_and_cannot_accept(app, mailbox, sign_in, client):
    owner = sign_in(plan="business")
    assert invite(client, "wanted@example.com").status_code == 303
    path = invitation_link(mailbox, "wanted@example.com")
    # The owner follows the link: signed in as someone else.
    forget_request_state()
    html = client.get(path).get_data(as_text=True)
    assert f"You are signed in as <strong>{owner.user.email}</strong>" in html
    assert "Accept the invitation" not in html
    refused = post(client, path, {"action": "accept"})
    assert refused.status_code == 409
    assert membership_of(owner.account.id, "wanted@example.com") is None
    assert len(open_invitations(owner.account.id)) == 1


def test_an_expired_link_answers_410(app, mailbox, sign_in, client):
    owner = sign_in(plan="business")
    assert invite(client, "late@example.com").status_code == 303
    path = invitation_link(mailbox, "late@example.com")
    clock.set_offset(timedelta(days=7, minutes=1))
    forget_request_state()
    answer = browser(app).get(path)
    assert answer.status_code == 410 and "expired on" in answer.get_data(as_text=True)
    # It holds no seat any more, is shown as expired, and can be sent again.
    html = page_of(client)
    assert "Expired" in html and "0 pending invitations" in html
    (expired,) = open_invitations(owner.account.id)
    assert act(client, f"/account/members/invitations/{expired.id}/resend").status_code == 303
    fresh = invitation_link(mailbox, "late@example.com", count=2)
    forget_request_state()
    assert browser(app).get(fresh).status_code == 200


def test_a_revoked_link_answers_410_and_frees_its_seat(app, mailbox, sign_in, client):
    owner = sign_in(plan="pro")  # one seat: the owner's; make room first
    owner.account.plan_name = "business"
    db.session.commit()
    assert invite(client, "gone@example.com").status_code == 303
    path = invitation_link(mailbox, "gone@example.com")
    (invitation,) = open_invitations(owner.account.id)
    answer = act(client, f"/account/members/invitations/{invitation.id}/revoke")
    assert answer.status_code == 303
    assert "1 of 10 seats used" in page_of(client)
    forget_request_state()
    revoked = browser(app).get(path)
    assert revoked.status_code == 410 and "withdrawn" in revoked.get_data(as_text=True)
    # Revoked: not found any more for the page's actions.
    again = act(client, f"/account/members/invitations/{invitation.id}/revoke")
    assert again.status_code == 404


def test_resending_makes_a_new_link_and_the_old_one_stops_working(app, mailbox, sign_in, client):
    owner = sign_in(plan="business")
    assert invite(client, "again@example.com").status_code == 303
    old = invitation_link(mailbox, "again@example.com")
    (invitation,) = open_invitations(owner.account.id)
    first_expiry = clock.as_utc(invitation.expires_at)
    clock.set_offset(timedelta(days=3))
    answer = act(client, f"/account/members/invitations/{invitation.id}/resend")
    assert answer.status_code == 303
    new = invitation_link(mailbox, "again@example.com", count=2)
    assert new != old
    forget_request_state()
    dead = browser(app).get(old)
    assert dead.status_code == 400 and "only the newest" in dead.get_data(as_text=True)
    forget_request_state()
    assert browser(app).get(new).status_code == 200
    (invitation,) = open_invitations(owner.account.id)
    assert clock.as_utc(invitation.expires_at) - first_expiry > timedelta(days=2, hours=23)


@pytest.mark.parametrize("token", ["x", "not-a-token-at-all-but-long-enough-to-look", "a" * 300])
def test_a_link_that_is_not_ours_answers_400(app, token):
    answer = browser(app).get(f"/account/invitations/{token}")
    assert answer.status_code == 400 and "not valid" in answer.get_data(as_text=True)


# --------------------------------------------------------------------------- seats


def test_business_has_ten_seats_counting_pending_invitations(app, sign_in, client):
    owner = sign_in(plan="business")
    for n in range(5):
        join(owner.account, "member", f"m{n}@example.com")
    for n in range(4):
        assert invite(client, f"p{n}@example.com").status_code == 303
    assert "10 of 10 seats used" in page_of(client)
    refused = invite(client, "eleventh@example.com")
    html = refused.get_data(as_text=True)
    assert refused.status_code == 409
    assert re.search(r'id="f-email-error">All 10 seats of the Business plan are taken', html)
    assert "6 members, 4 pending invitations" in html
    assert '<a href="/pricing">Plans with more seats</a>' in html and "Agency (25 seats)" in html
    assert len(open_invitations(owner.account.id)) == 4
    # Revoking one frees its seat.
    first = open_invitations(owner.account.id)[0]
    act(client, f"/account/members/invitations/{first.id}/revoke")
    assert invite(client, "eleventh@example.com").status_code == 303


def test_a_free_account_has_one_seat(app, sign_in, client):
    owner = sign_in(plan="free")
    refused = invite(client, "friend@example.com")
    html = refused.get_data(as_text=True)
    assert refused.status_code == 409
    assert "All 1 seat of the Free plan are taken" in html and "Business (10 seats)" in html
    assert open_invitations(owner.account.id) == []


def test_seats_are_checked_again_at_acceptance(app, mailbox, sign_in, client):
    owner = sign_in(plan="business")
    join(owner.account, "member")
    assert invite(client, "toolate@example.com").status_code == 303
    path = invitation_link(mailbox, "toolate@example.com")
    accounts.change_plan(db.session.get(Account, owner.account.id), "pro")  # 1 seat now
    db.session.commit()
    visitor = browser(app, "198.51.100.37")
    visitor.environ_base["HTTP_REFERER"] = "https://svc.test" + path
    refused = post(visitor, path, {"action": "sign-up", "password": PASSWORD})
    assert refused.status_code == 409 and "no free seat" in refused.get_data(as_text=True)
    # Nothing half-saved: no user, the invitation still open.
    assert db.session.scalar(select(User.id).where(User.email == "toolate@example.com")) is None
    assert len(open_invitations(owner.account.id)) == 1


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("email", "role", "field", "status", "message"),
    [
        ("not-an-email", "member", "email", 422, "Enter an email address"),
        ("x@example.com", "superuser", "role", 422, "Choose a role"),
        ("x" * 320 + "@example.com", "member", "email", 422, "at most 320"),
    ],
)
def test_a_bad_invitation_is_refused_beside_its_field(
    app, sign_in, client, email, role, field, status, message
):
    owner = sign_in(plan="business")
    answer = invite(client, email, role)
    html = answer.get_data(as_text=True)
    assert answer.status_code == status
    assert re.search(rf'id="f-{field}-error">[^<]*{message}', html), html
    assert open_invitations(owner.account.id) == []


def test_inviting_a_member_or_an_invited_address_says_so(app, sign_in, client):
    owner = sign_in(plan="business")
    join(owner.account, "member", "already@example.com")
    member = invite(client, "Already@example.com")
    assert member.status_code == 409
    assert "already@example.com is a member of this account already" in member.get_data(
        as_text=True
    )
    assert invite(client, "twice@example.com").status_code == 303
    twice = invite(client, "twice@example.com")
    assert twice.status_code == 409 and "invited already" in twice.get_data(as_text=True)
    assert len(open_invitations(owner.account.id)) == 1


def test_an_admin_cannot_invite_owners_and_an_owner_can(app, sign_in, client):
    owner = sign_in(plan="business")
    admin = join(owner.account, "admin")
    admin_client = browser(app, "198.51.100.38")
    assert log_in(admin_client, admin.user.email).status_code == 302
    html = page_of(admin_client)
    assert '<option value="owner"' not in html and '<option value="admin"' in html
    refused = invite(admin_client, "boss@example.com", "owner")
    assert refused.status_code == 403
    assert "Only an owner can invite owners" in refused.get_data(as_text=True)
    assert invite(admin_client, "colleague@example.com", "admin").status_code == 303
    assert invite(client, "boss@example.com", "owner").status_code == 303
    assert {i.role for i in open_invitations(owner.account.id)} == {"admin", "owner"}


def test_a_mail_that_cannot_be_sent_leaves_no_invitation(app, sign_in, client):
    owner = sign_in(plan="business")
    app.config["MAIL_URL"] = "smtp://127.0.0.1:9"  # nothing listens there
    answer = invite(client, "unreachable@example.com")
    assert answer.status_code == 503
    assert "no invitation was made" in answer.get_data(as_text=True)
    assert open_invitations(owner.account.id) == []


# --------------------------------------------------------------------------- members


def test_changing_a_role(app, sign_in, client):
    owner = sign_in(plan="business")
    member = join(owner.account, "member")
    answer = act(client, f"/account/members/{member.id}/role", {"role": "admin"})
    assert answer.status_code == 303
    assert membership_of(owner.account.id, member.user.email).role == "admin"
    bad = act(client, f"/account/members/{member.id}/role", {"role": "emperor"})
    assert bad.status_code == 422
    assert f'id="role-{member.id}-error">Choose a role' in bad.get_data(as_text=True)


def test_an_admin_cannot_change_or_remove_owners(app, sign_in, client):
    owner = sign_in(plan="business")
    admin = join(owner.account, "admin")
    member = join(owner.account, "member")
    admin_client = browser(app, "198.51.100.39")
    assert log_in(admin_client, admin.user.email).status_code == 302
    owner_id = owner.membership.id
    demote = act(admin_client, f"/account/members/{owner_id}/role", {"role": "member"})
    promote = act(admin_client, f"/account/members/{member.id}/role", {"role": "owner"})
    remove = act(admin_client, f"/account/members/{owner_id}/remove")
    assert (demote.status_code, promote.status_code, remove.status_code) == (403, 403, 403)
    assert membership_of(owner.account.id, owner.user.email).role == "owner"
    assert membership_of(owner.account.id, member.user.email).role == "member"
    # An admin manages the others.
    assert act(admin_client, f"/account/members/{member.id}/remove").status_code == 303
    assert membership_of(owner.account.id, member.user.email) is None


def test_the_last_owner_cannot_be_demoted_or_leave(app, sign_in, client):
    owner = sign_in(plan="business")
    demoted = act(client, f"/account/members/{owner.membership.id}/role", {"role": "admin"})
    assert demoted.status_code == 409 and "last owner" in demoted.get_data(as_text=True)
    left = act(client, "/account/members/leave")
    assert left.status_code == 409 and "last owner" in left.get_data(as_text=True)
    removed = act(client, f"/account/members/{owner.membership.id}/remove")
    assert removed.status_code == 409
    assert "you cannot leave" in page_of(client)
    assert membership_of(owner.account.id, owner.user.email).role == "owner"
    # With a second owner, the first can step down.
    second = join(owner.account, "owner")
    answer = act(client, f"/account/members/{owner.membership.id}/role", {"role": "admin"})
    assert answer.status_code == 303
    assert membership_of(owner.account.id, second.user.email).role == "owner"


def test_a_member_leaves(app, sign_in, client):
    owner = sign_in(plan="business")
    member = join(owner.account, "member")
    # The member has another account of their own too.
    own = Account(name="own", plan_name="free")
    db.session.add(own)
    db.session.flush()
    db.session.add(Membership(account_id=own.id, user_id=member.user_id, role="owner"))
    db.session.commit()
    member_client = browser(app, "198.51.100.40")
    assert log_in(member_client, member.user.email).status_code == 302
    member_client.environ_base["HTTP_REFERER"] = REFERER
    switch = post(member_client, "/account/switch", {"account_id": owner.account.id}, page=PAGE)
    assert switch.status_code == 302
    answer = act(member_client, "/account/members/leave")
    assert answer.status_code == 303 and answer.location == "/account/settings"
    assert membership_of(owner.account.id, member.user.email) is None
    forget_request_state()
    html = member_client.get("/account/settings").get_data(as_text=True)
    assert f"You have left {owner.account.name}" in html and "<strong>own</strong>" in html


def test_leaving_the_only_account_leaves_a_free_account_of_ones_own(app, sign_in, client):
    owner = sign_in(plan="business")
    member = join(owner.account, "admin", "only-team@example.com")
    member_client = browser(app, "198.51.100.41")
    assert log_in(member_client, member.user.email).status_code == 302
    assert act(member_client, "/account/members/leave").status_code == 303
    db.session.expire_all()
    user = db.session.get(User, member.user_id)
    assert [(m.role, m.account.plan_name) for m in user.memberships] == [("owner", "free")]
    forget_request_state()
    assert member_client.get("/account/settings").status_code == 200
    assert log_in(browser(app, "198.51.100.42"), member.user.email).status_code == 302


def test_transferring_ownership(app, sign_in, client):
    owner = sign_in(plan="business")
    member = join(owner.account, "member")
    html = page_of(client)
    assert 'action="/account/members/transfer"' in html
    answer = act(client, "/account/members/transfer", {"member_id": member.id})
    assert answer.status_code == 303
    assert membership_of(owner.account.id, member.user.email).role == "owner"
    assert membership_of(owner.account.id, owner.user.email).role == "admin"
    # Now an admin: no transfer any more.
    html = page_of(client)
    assert "/account/members/transfer" not in html
    again = act(client, "/account/members/transfer", {"member_id": member.id})
    assert again.status_code == 403


def test_transferring_to_an_owner_or_oneself_is_refused(app, sign_in, client):
    owner = sign_in(plan="business")
    other_owner = join(owner.account, "owner")
    to_owner = act(client, "/account/members/transfer", {"member_id": other_owner.id})
    assert to_owner.status_code == 409 and "an owner already" in to_owner.get_data(as_text=True)
    to_self = act(client, "/account/members/transfer", {"member_id": owner.membership.id})
    assert to_self.status_code == 422
    assert membership_of(owner.account.id, owner.user.email).role == "owner"


# --------------------------------------------------------------------------- access


MANAGING = [
    ("/account/members/invite", {"email": "x@example.com", "role": "member"}),
    ("/account/members/invitations/{invitation}/resend", {}),
    ("/account/members/invitations/{invitation}/revoke", {}),
    ("/account/members/{member}/role", {"role": "admin"}),
    ("/account/members/{member}/remove", {}),
    ("/account/members/transfer", {"member_id": "{member}"}),
]

# The actions that name a member or an invitation.
NAMING_IDS = [(p, d) for p, d in MANAGING if "{" in p or any("{" in v for v in d.values())]


@pytest.fixture
def team(app, sign_in, client):
    """A business account with an owner, an admin, a member and an invitation; the client
    is signed in as nobody yet (the test signs in whom it needs)."""
    owner = sign_in(plan="business")
    admin = join(owner.account, "admin")
    member = join(owner.account, "member")
    assert invite(client, "pending@example.com").status_code == 303
    (invitation,) = open_invitations(owner.account.id)
    ids = {"member": member.id, "invitation": invitation.id}
    return owner, admin, member, ids


def _fill(path: str, data: dict, ids: dict) -> tuple[str, dict]:
    return path.format(**ids), {k: v.format(**ids) for k, v in data.items()}


def _snapshot(account_id: int) -> tuple:
    db.session.expire_all()
    roles = db.session.execute(
        select(Membership.id, Membership.role).where(Membership.account_id == account_id)
    ).all()
    invitations = db.session.execute(
        select(Invitation.id, Invitation.token_hash, Invitation.revoked_at).where(
            Invitation.account_id == account_id
        )
    ).all()
    return sorted(roles), sorted(invitations)


@pytest.mark.parametrize(("path", "data"), MANAGING)
def test_a_member_cannot_manage_members(app, team, path, data):
    owner, _admin, member, ids = team
    member_client = browser(app, "198.51.100.43")
    assert log_in(member_client, member.user.email).status_code == 302
    before = _snapshot(owner.account.id)
    path, data = _fill(path, data, ids)
    answer = act(member_client, path, data)
    assert answer.status_code == 403
    assert _snapshot(owner.account.id) == before


def test_an_admin_cannot_transfer_ownership(app, team):
    owner, admin, _member, ids = team
    admin_client = browser(app, "198.51.100.44")
    assert log_in(admin_client, admin.user.email).status_code == 302
    answer = act(admin_client, "/account/members/transfer", {"member_id": ids["member"]})
    assert answer.status_code == 403
    assert membership_of(owner.account.id, owner.user.email).role == "owner"


@pytest.mark.parametrize(("path", "data"), [*MANAGING, ("/account/members/leave", {})])
def test_every_action_needs_its_csrf_token(app, team, client, path, data):
    owner, _admin, _member, ids = team
    before = _snapshot(owner.account.id)
    path, data = _fill(path, data, ids)
    forget_request_state()
    client.environ_base["HTTP_REFERER"] = REFERER
    answer = client.post(path, data=data)
    assert answer.status_code == 400 and "Reload the page" in answer.get_data(as_text=True)
    assert _snapshot(owner.account.id) == before


@pytest.mark.parametrize(("path", "data"), [*MANAGING, ("/account/members/leave", {})])
def test_every_action_asks_to_sign_in_first(app, team, path, data):
    owner, _admin, _member, ids = team
    before = _snapshot(owner.account.id)
    path, data = _fill(path, data, ids)
    visitor = browser(app, "198.51.100.45")
    answer = post(visitor, path, data, page="/account/login")
    assert answer.status_code == 302 and answer.location.startswith("/account/login?next=")
    assert _snapshot(owner.account.id) == before


@pytest.mark.parametrize(("path", "data"), NAMING_IDS)
def test_another_accounts_members_and_invitations_are_not_found(
    app, team, sign_in, client, path, data
):
    owner, _admin, _member, ids = team
    stranger = sign_in(plan="business")  # the client is the stranger's owner now
    before = _snapshot(owner.account.id)
    path, data = _fill(path, data, ids)
    answer = act(client, path, data)
    assert answer.status_code == 404
    assert _snapshot(owner.account.id) == before
    assert stranger.account.id != owner.account.id


def test_ids_that_do_not_exist_are_not_found(app, sign_in, client):
    sign_in(plan="business")
    assert act(client, "/account/members/999999/role", {"role": "admin"}).status_code == 404
    assert act(client, "/account/members/999999/remove").status_code == 404
    assert act(client, "/account/members/transfer", {"member_id": "x"}).status_code == 404
    long_id = "z" * 80
    assert act(client, f"/account/members/invitations/{long_id}/resend").status_code == 404


def test_agency_has_25_seats(app, sign_in, client):
    owner = sign_in(plan="agency")
    for n in range(3):
        join(owner.account, "member", f"count{n}@example.com")
    html = page_of(client)
    members = db.session.scalar(
        select(func.count(Membership.id)).where(Membership.account_id == owner.account.id)
    )
    assert f"{members} of 25 seats used" in html


@pytest.mark.parametrize("action", ["sign-up", "accept"])
def test_the_invitation_form_needs_its_csrf_token(app, mailbox, sign_in, client, action):
    owner = sign_in(plan="business")
    assert invite(client, "csrf@example.com").status_code == 303
    path = invitation_link(mailbox, "csrf@example.com")
    visitor = browser(app, "198.51.100.46")
    visitor.environ_base["HTTP_REFERER"] = "https://svc.test" + path
    forget_request_state()
    answer = visitor.post(path, data={"action": action, "password": PASSWORD})
    assert answer.status_code == 400 and "Reload the page" in answer.get_data(as_text=True)
    assert db.session.scalar(select(User.id).where(User.email == "csrf@example.com")) is None
    assert len(open_invitations(owner.account.id)) == 1
