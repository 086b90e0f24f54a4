import os
import shlex
import shutil
import sys
from pathlib import Path

import click
from flask.cli import AppGroup

from extensions import db
from models import PLAN_ORDER
from services import accounts, keys
from services.plans import UnknownPlan

accounts_cli = AppGroup("accounts", help="Create accounts and change their plans.")

PLAN_CHOICE = click.Choice(PLAN_ORDER, case_sensitive=False)


@accounts_cli.command("create")
@click.argument("email")
@click.option("--plan", type=PLAN_CHOICE, required=True, help="The account's plan.")
@click.option("--password", default=None, help="Lets the user sign in to the web UI.")
@click.option("--name", default=None, help="Account name (defaults to the email's local part).")
@click.option("--admin", is_flag=True, help="An operator: may open /admin/.")
def create(email, plan, password, name, admin):
    """Create an account on PLAN owned by a new user EMAIL (its address counts as confirmed)."""
    try:
        account = accounts.create_account(
            email, plan, password=password, name=name, verified=True, admin=admin
        )
    except (accounts.AccountRefused, UnknownPlan) as refused:
        raise click.ClickException(str(refused)) from None
    db.session.commit()
    click.echo(f"Created account {account.id} ({account.name}) on the {account.plan_name} plan.")


@accounts_cli.command("set-plan")
@click.argument("email")
@click.argument("plan", type=PLAN_CHOICE)
def set_plan(email, plan):
    """Move EMAIL's account to PLAN (effective on every process within a second)."""
    try:
        account = accounts.set_plan(email, plan)
    except (accounts.AccountRefused, UnknownPlan) as refused:
        raise click.ClickException(str(refused)) from None
    db.session.commit()
    click.echo(f"Account {account.id} ({account.name}) is now on the {account.plan_name} plan.")


@accounts_cli.command("set-admin")
@click.argument("email")
@click.option("--revoke", is_flag=True, help="No longer an operator.")
def set_admin(email, revoke):
    """Make the user EMAIL an operator (/admin/ on the site), or, with --revoke, no longer."""
    try:
        user = accounts.set_admin(email, not revoke)
    except accounts.AccountRefused as refused:
        raise click.ClickException(str(refused)) from None
    db.session.commit()
    click.echo(f"{user.email} is {'now' if user.is_admin else 'no longer'} an operator.")


@accounts_cli.command("demo")
def demo():
    """Create the demo account and a demo Pro key once, printing the key."""
    try:
        account = accounts.create_account(
            "demo@example.com", "pro", password="demo-password", verified=True
        )
    except accounts.AccountRefused:
        click.echo(
            "Demo account demo@example.com exists (password demo-password). Its key was shown "
            "when it was created; make another with:\n"
            f"  {flask_command()} keys create demo@example.com --name another"
        )
        return
    _key, raw = keys.create_key(account, "demo")
    db.session.commit()
    click.echo("Demo account: demo@example.com / demo-password (Pro plan)")
    click.echo("Demo Pro API key (shown once, keep it):")
    click.echo(raw)


def flask_command() -> str:
    """This ``flask --app app`` as it can be typed again in the shell that ran this command:
    the flask program as it was invoked (``.venv/bin/flask`` by ``make run``; ``flask`` when
    it is the one on PATH), after the ``APP_ENV`` it runs with (outside development the app
    refuses to start without a SECRET_KEY, and ``make run`` sets none)."""
    invoked = Path(sys.argv[0])
    flask = invoked if invoked.name == "flask" else Path(sys.executable).with_name("flask")
    on_path = shutil.which("flask")
    if on_path is not None and Path(on_path).resolve() == flask.resolve():
        program = "flask"
    elif flask.is_absolute() and flask.is_relative_to(Path.cwd()):
        program = str(flask.relative_to(Path.cwd()))
    else:
        program = str(flask)
    env = os.environ.get("APP_ENV")
    prefix = f"APP_ENV={shlex.quote(env)} " if env else ""
    return f"{prefix}{shlex.quote(program)} --app app"
