"""Signed-in visitors for the site's account tests: ``sign_in`` makes a user (verified) in
an account and signs the test ``client`` in, as the login form would."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from secrets import token_hex

import pytest
from flask_login.utils import _create_identifier

from extensions import db
from models import Account, Membership, User
from services import accounts, clock, users

PASSWORD = "correct horse battery"
_numbers = itertools.count(1)


@dataclass
class SignedIn:
    user: User
    account: Account
    membership: Membership
    password: str = PASSWORD


@pytest.fixture
def sign_in(app, client):
    """``sign_in(plan="pro", role="owner", email=None, account=None, fresh=True)``: a new
    verified user, signed in on ``client``. With a role below owner, the new account gets an
    owner of its own first; ``account=`` adds the user to that account instead. ``fresh``
    False: the login is older than 10 minutes (re-authentication is asked)."""

    def sign_in(
        plan: str = "pro",
        role: str = "owner",
        email: str | None = None,
        account: Account | None = None,
        fresh: bool = True,
    ) -> SignedIn:
        email = email or f"person{next(_numbers)}@example.com"
        if account is None and role == "owner":
            account = accounts.create_account(email, plan, password=PASSWORD, verified=True)
            user = account.memberships[0].user
        else:
            if account is None:
                owner = f"owner{next(_numbers)}@example.com"
                account = accounts.create_account(owner, plan, password=PASSWORD, verified=True)
            user = User(email=email, email_verified_at=clock.now(), session_token=token_hex(16))
            user.set_password(PASSWORD)
            db.session.add(user)
            db.session.flush()
            db.session.add(Membership(account_id=account.id, user_id=user.id, role=role))
        users.start_session(user)  # as the login form does
        db.session.commit()
        membership = (
            db.session.query(Membership).filter_by(account_id=account.id, user_id=user.id).one()
        )
        with app.test_request_context(environ_base=client.environ_base):
            identifier = _create_identifier()  # the client's address and browser
        with client.session_transaction() as session:
            session.clear()
            session["_user_id"] = user.get_id()
            session["_id"] = identifier
            session["_fresh"] = True
            session["account_id"] = account.id
            session["login_at"] = int(time.time()) - (0 if fresh else 3600)
        return SignedIn(user, account, membership)

    return sign_in
