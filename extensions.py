"""Extension singletons, bound to the app in ``create_app``."""

from datetime import datetime

from flask import session
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from flask_login import LoginManager
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import DateTime
from sqlalchemy.orm import DeclarativeBase, registry


class Base(DeclarativeBase):
    # Every timestamp is stored with its time zone (UTC) where the database supports it.
    registry = registry(type_annotation_map={datetime: DateTime(timezone=True)})


class SiteLoginManager(LoginManager):
    """flask-login's manager, its strong session protection kept to signed-in sessions.

    - A visitor's session that holds no user (only the CSRF token of the site's forms) has
      nothing to protect: flask-login's check rewrote it on every page (and asked to clear
      a remember cookie it never had), two ``Set-Cookie`` answers per page view.
    - A session restored from the remember cookie is bound to the browser it came back on:
      flask-login's restore leaves the session without its identifier, which strong
      protection then took for a stolen session on the next page, signing the user out and
      deleting the remember cookie ("Keep me signed in" lasted one page).
    """

    def _session_protection_failed(self):
        if "_user_id" not in session:
            return False
        return super()._session_protection_failed()

    def _load_user_from_remember_cookie(self, cookie):
        user = super()._load_user_from_remember_cookie(cookie)
        if user is not None:
            session["_id"] = self._session_identifier_generator()
        return user


db = SQLAlchemy(model_class=Base)
migrate = Migrate()
login_manager = SiteLoginManager()
# API keys' per-minute limits are evaluated on this limiter's strategy and storage by the
# API pipeline (services/ratelimit.py), once per request; there are no default limits
# (app.py leaves flask-limiter's request hooks out for that reason).
limiter = Limiter(key_func=get_remote_address)
