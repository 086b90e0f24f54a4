"""Settings from the environment: one declaration per setting (``config.SETTINGS``)."""

from pathlib import Path

import pytest

import config
from app import create_app
from engines.models.providers import Provider
from tests.helpers import app_config

ROOT = Path(__file__).resolve().parent.parent
CONFIGURABLE = [setting for setting in config.SETTINGS if setting.variables]
FIXED = [setting for setting in config.SETTINGS if not setting.variables]

# Settings the environment may set that no operator page (README.md, docs/) names yet: once
# one is documented, it leaves the list.


@pytest.fixture(autouse=True)
def bare_environment(monkeypatch):
    """No variable any setting is read from is set (whatever the machine's environment)."""
    for setting in config.SETTINGS:
        for variable in (setting.name, *setting.variables):
            monkeypatch.delenv(variable, raising=False)


def example(setting: config.Setting) -> tuple[str, object]:
    """A valid value of the setting's type other than its default: the variable's text, and
    the value read from it."""
    if setting.type is bool:
        return ("off", False) if setting.default else ("Yes", True)
    if setting.type is int:
        number = (setting.default or 0) + 7
        text = str(number)
    elif setting.type is float:
        number = (setting.default or 0) + 1.25
        text = str(number)
    else:
        text = number = f"{setting.name.lower()}-example"
    if setting.text:
        return f"  {text} ", text
    return text, setting.parse(text) if setting.parse else number


@pytest.mark.parametrize("setting", CONFIGURABLE, ids=lambda setting: setting.name)
def test_every_configurable_setting_is_read_from_the_environment(monkeypatch, setting):
    assert config.settings()[setting.name] == setting.default
    text, expected = example(setting)
    assert expected != setting.default
    for variable in setting.variables:
        monkeypatch.setenv(variable, text)
        value = config.settings()[setting.name]
        assert value == expected
        assert type(value) is (str if setting.text else setting.type)
        monkeypatch.delenv(variable)


@pytest.mark.parametrize("setting", CONFIGURABLE, ids=lambda setting: setting.name)
def test_an_empty_variable_is_unset(monkeypatch, setting):
    for variable in setting.variables:
        monkeypatch.setenv(variable, "")
    assert config.settings()[setting.name] == config.Config.from_env({})[setting.name]


@pytest.mark.parametrize("setting", FIXED, ids=lambda setting: setting.name)
def test_fixed_settings_are_not_read_from_the_environment(monkeypatch, setting):
    monkeypatch.setenv(setting.name, "from-the-environment")
    assert config.settings()[setting.name] == setting.default
    assert setting.name not in config.Config.from_env()


def test_config_holds_every_default_of_its_type():
    for setting in config.SETTINGS:
        assert getattr(config.Config, setting.name) is setting.default
        assert setting.default is None or type(setting.default) is setting.type, setting.name


def test_every_configurable_setting_is_documented():
    """The operators' settings page holds the table ``config.py`` makes of them all."""
    page = (ROOT / "docs" / "operating" / "settings.md").read_text()
    assert config.markdown_table() in page, "docs/operating/settings.md: paste the new table"
    for setting in CONFIGURABLE:
        assert f"`{setting.variables[0]}`" in config.markdown_table()


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
    monkeypatch.setenv("DATABASE_URL", "")
    uri = config.Config.from_env()["SQLALCHEMY_DATABASE_URI"]
    assert uri == f"sqlite:///{config.INSTANCE_DIR / 'platform.db'}"


def test_secret_key_is_required_outside_development(monkeypatch):
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


@pytest.mark.parametrize("text", ["1", "true", "TRUE", "yes", "on", " On "])
def test_true_settings(monkeypatch, text):
    monkeypatch.setenv("FETCH_ALLOW_PRIVATE", text)
    assert config.settings()["FETCH_ALLOW_PRIVATE"] is True


@pytest.mark.parametrize("text", ["0", "false", "no", "off", " ", "enabled"])
def test_false_settings(monkeypatch, text):
    monkeypatch.setenv("FETCH_ALLOW_PRIVATE", text)
    assert config.settings()["FETCH_ALLOW_PRIVATE"] is False


def test_the_environment_name_comes_from_app_env_then_flask_env(monkeypatch):
    assert config.settings()["ENV_NAME"] == "production"
    monkeypatch.setenv("FLASK_ENV", "development")
    assert config.settings()["ENV_NAME"] == "development"
    monkeypatch.setenv("APP_ENV", "test")
    assert config.settings()["ENV_NAME"] == "test"


def test_the_bucket_region_falls_back_on_boto3s(monkeypatch):
    assert config.settings()["S3_REGION"] is None
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-3")
    assert config.settings()["S3_REGION"] == "eu-west-3"
    monkeypatch.setenv("AWS_REGION", " eu-west-2 ")
    assert config.settings()["S3_REGION"] == "eu-west-2"
    monkeypatch.setenv("S3_REGION", " ")
    assert config.settings()["S3_REGION"] == "eu-west-2"
    monkeypatch.setenv("S3_REGION", "auto")
    assert config.settings()["S3_REGION"] == "auto"


def test_storage_settings_are_passed_on_as_text_for_storage_to_check(monkeypatch):
    monkeypatch.setenv("S3_MAX_ATTEMPTS", "soon")
    monkeypatch.setenv("S3_BUCKET", "  ")
    settings = config.settings()
    assert settings["S3_MAX_ATTEMPTS"] == "soon"
    assert settings["S3_BUCKET"] is None


def test_blank_trusted_hosts_are_unset(monkeypatch):
    monkeypatch.setenv("TRUSTED_HOSTS", "   ")
    assert config.settings()["TRUSTED_HOSTS"] is None
    monkeypatch.setenv("TRUSTED_HOSTS", "svc.herokuapp.com, b.example.com")
    assert config.settings()["TRUSTED_HOSTS"] == "svc.herokuapp.com, b.example.com"


def test_the_provider_timeout_is_read_from_the_environment(monkeypatch):
    """AI_TIMEOUT_SECONDS was declared, and documented as a setting, but never read."""
    monkeypatch.setenv("AI_TIMEOUT_SECONDS", "7.5")
    monkeypatch.setenv("AI_BASE_URL", "http://localhost:11434/v1")
    assert Provider.from_settings(config.settings()).timeout == 7.5
    app = create_app(app_config())
    assert app.config["AI_TIMEOUT_SECONDS"] == 7.5
    with app.app_context():
        assert Provider.from_settings().timeout == 7.5
