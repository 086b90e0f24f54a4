"""Settings from the environment."""

import pytest

import config
from app import create_app


@pytest.mark.parametrize(
    "url, expected",
    [
        ("postgres://u:p@db.example.com:5432/d", "postgresql+psycopg://u:p@db.example.com:5432/d"),
        ("postgresql://u@h/d", "postgresql+psycopg://u@h/d"),
        ("postgresql+psycopg://u@h/d", "postgresql+psycopg://u@h/d"),
        ("sqlite:////tmp/x.db", "sqlite:////tmp/x.db"),
    ],
)
def test_database_url_accepts_heroku_style_urls(monkeypatch, url, expected):
    monkeypatch.setenv("DATABASE_URL", url)
    assert config.Config.from_env()["SQLALCHEMY_DATABASE_URI"] == expected


def test_default_database_is_sqlite_under_instance(monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    uri = config.Config.from_env()["SQLALCHEMY_DATABASE_URI"]
    assert uri == f"sqlite:///{config.INSTANCE_DIR / 'platform.db'}"


def test_secret_key_is_required_outside_development(monkeypatch):
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.setenv("APP_ENV", "production")
    with pytest.raises(RuntimeError, match="SECRET_KEY is not set"):
        create_app({"SQLALCHEMY_DATABASE_URI": "sqlite://"})


def test_settings_are_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("REDIS_URL", "redis://cache.example.com:6379/0")
    monkeypatch.setenv("AI_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("AI_API_KEY", "sk-test")
    settings = config.Config.from_env()
    assert settings["REDIS_URL"] == "redis://cache.example.com:6379/0"
    assert settings["AI_BASE_URL"] == "http://localhost:11434/v1"
    assert settings["AI_API_KEY"] == "sk-test"
