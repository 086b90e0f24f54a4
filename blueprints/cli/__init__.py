"""Operator commands: ``flask --app app accounts|keys|worker …``."""

from blueprints.cli.accounts import accounts_cli
from blueprints.cli.keys import keys_cli
from blueprints.cli.worker import worker_cli


def register_cli(app) -> None:
    app.cli.add_command(accounts_cli)
    app.cli.add_command(keys_cli)
    app.cli.add_command(worker_cli)
