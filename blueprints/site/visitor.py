"""Who is visiting the site: the signed visitor cookie, the address hashes, bots.

The cookie holds a random id, signed with the app's secret key (itsdangerous): HttpOnly,
SameSite=Lax, Secure outside development, kept a year, and given with a visitor's first run
(pages alone set none). A cookie whose signature does not verify is replaced by a new one
when the visitor runs a tool, and the request that carried it is told so (``tampered``): a
run is refused rather than counted against someone else's id.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from functools import lru_cache

from flask import after_this_request, current_app, request
from flask_login import current_user
from itsdangerous import BadSignature, URLSafeSerializer

from blueprints.site.access import current_membership, may_be_signed_in
from services import clock
from services.allowance import Visitor, address_hashes
from services.plans import get_plan

COOKIE = "svc_visitor"
_MAX_AGE = 365 * 86400
# Crawlers, link previewers and HTTP libraries announce themselves; they may read pages but
# not run tools. (A headless browser driven by a person's tests says "HeadlessChrome": not
# refused.)
_BOTS = re.compile(
    r"bot\b|bot/|crawl|spider|slurp|facebookexternalhit|embedly|bingpreview|preview|"
    r"python-requests|python-urllib|aiohttp|go-http-client|okhttp|java/|libwww|wget|curl|"
    r"httpie|scrapy|headlesschrome.*lighthouse",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SiteVisitor:
    visitor: Visitor
    # The request's cookie was present but its signature did not verify.
    tampered: bool


def _serializer() -> URLSafeSerializer:
    return _serializer_for(current_app.config["SECRET_KEY"])


@lru_cache(maxsize=4)
def _serializer_for(secret_key: str) -> URLSafeSerializer:
    return URLSafeSerializer(secret_key, salt="svc-visitor")


def current_visitor() -> SiteVisitor:
    """This request's visitor (once per request); a new one gets its cookie with the answer
    to its first post (a run)."""
    found = request.environ.get("svc.visitor")
    if found is not None:
        return found
    raw = request.cookies.get(COOKIE)
    visitor_id, tampered = None, False
    if raw:
        try:
            visitor_id = _serializer().loads(raw)
        except BadSignature:
            tampered = True
        if not (isinstance(visitor_id, str) and re.fullmatch(r"[A-Za-z0-9_-]{16,64}", visitor_id)):
            tampered, visitor_id = tampered or visitor_id is not None, None
    if visitor_id is None:
        visitor_id = secrets.token_urlsafe(18)
        # The cookie is given with the first run, not with every page a visitor without one
        # reads (a crawler's, a first visit's): a new id has run nothing, so a page counts
        # it as 0 all the same, and signing a cookie was a fifth of a first visit's time.
        if request.method not in ("GET", "HEAD"):
            _set_cookie(visitor_id)
    browser = "\n".join(
        (request.headers.get("User-Agent", ""), request.headers.get("Accept-Language", ""))
    )
    address, device = address_hashes(request.remote_addr, browser, clock.utc_day())
    found = SiteVisitor(Visitor(visitor_id, address, device, **_signed_in()), tampered)
    request.environ["svc.visitor"] = found
    return found


def remember_visitor() -> None:
    """Give this request's visitor its cookie now if it has none (or a tampered one), on
    a GET too: the site assistant counts questions by it."""
    found = current_visitor()
    if request.method in ("GET", "HEAD") and (found.tampered or COOKIE not in request.cookies):
        _set_cookie(found.visitor.id)


def _signed_in() -> dict:
    """A signed-in user runs for the current account, on its plan's allowance."""
    if not (may_be_signed_in() and current_user.is_authenticated):
        return {}
    membership = current_membership()
    if membership is None:  # every account of the user is suspended: counted as anonymous
        return {}
    account = membership.account
    plan = get_plan(account.plan_name)
    return {"account_id": account.id, "plan": plan, "user_id": current_user.id}


def _set_cookie(visitor_id: str) -> None:
    value = _serializer().dumps(visitor_id)
    secure = current_app.config["ENV_NAME"] not in ("development", "test")

    @after_this_request
    def remember(response):
        response.set_cookie(
            COOKIE, value, max_age=_MAX_AGE, httponly=True, samesite="Lax", secure=secure
        )
        return response


def is_bot() -> bool:
    """A request that must not run tools: a crawler's, or one with no user agent at all."""
    agent = request.headers.get("User-Agent", "")
    return not agent.strip() or bool(_BOTS.search(agent))
