"""The application factory's database pool: a connection idle for a while is checked before
use (app.py ``_ping_idle_connections``), so one the server dropped meanwhile is replaced
instead of failing the statement given to it."""

import psycopg
import pytest
import sqlalchemy as sa

from app import create_app
from extensions import db
from tests.conftest import app_config, needs_pg


def _backend_pid() -> int:
    return db.session.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()


def _terminate(pid: int) -> None:
    """Drop the connection from the server's side, as a restart or an idle timeout does."""
    url = db.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


@needs_pg
def test_a_connection_dropped_while_idle_is_replaced_before_use(_schema):
    app = create_app(app_config(DB_PING_AFTER_IDLE=0))  # every checkout counts as idle
    with app.app_context():
        first = _backend_pid()
        db.session.commit()  # the connection goes back to the pool
        _terminate(first)
        second = _backend_pid()  # answered on a new connection: no error
        assert second != first
        db.session.remove()
        db.engine.dispose()


@needs_pg
def test_a_connection_back_in_use_within_the_idle_time_is_not_pinged(_schema):
    app = create_app(app_config(DB_PING_AFTER_IDLE=3600))
    with app.app_context():
        first = _backend_pid()
        db.session.commit()
        _terminate(first)
        # No ping: the statement meets the dropped connection (the API answers such an
        # error 503, tests/blueprints/api/test_outages.py), and the pool is renewed.
        with pytest.raises(sa.exc.OperationalError):
            _backend_pid()
        db.session.rollback()
        assert _backend_pid() != first
        db.session.remove()
        db.engine.dispose()
