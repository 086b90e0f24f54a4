"""Extension singletons, bound to the app in ``create_app``."""

from datetime import datetime

from flask import request
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
# API pipeline (blueprints/api/pipeline.py), once per request; there are no default limits.
limiter = Limiter(key_func=get_remote_address)


@limiter.request_filter
def _api_spends_its_own_limit() -> bool:
    """API requests spend their per-key limit in the API pipeline, once per request."""
    return request.path.startswith("/v1/")
