import click
from flask import current_app
from flask.cli import with_appcontext
from rq import Queue, SimpleWorker

from services.redis import redis_client


@click.command("worker")
@click.option("--queue", "queues", multiple=True, default=["default"], show_default=True)
@with_appcontext
def worker_cli(queues):
    """Run an RQ worker (SimpleWorker: keeps loaded models between jobs) with the app context."""
    client = redis_client(current_app)
    if client is None:
        raise click.ClickException(
            "REDIS_URL is not set: the embedded default runs jobs inside the web process."
        )
    worker = SimpleWorker([Queue(name, connection=client) for name in queues], connection=client)
    worker.work(with_scheduler=True)
