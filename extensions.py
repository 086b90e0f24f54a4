"""Extension singletons, bound to the app in ``create_app``."""

from datetime import datetime

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


db = SQLAlchemy(model_class=Base)
migrate = Migrate()
login_manager = LoginManager()
# API keys' per-minute limits are evaluated on this limiter's strategy and storage by the
# API pipeline (services/ratelimit.py), once per request; there are no default limits
# (app.py leaves flask-limiter's request hooks out for that reason).
limiter = Limiter(key_func=get_remote_address)
