"""``flask --app app worker``: the RQ worker of the Procfile, with the app context."""

import click
from flask import current_app
from flask.cli import with_appcontext
from rq import Queue, SimpleWorker

from services import sweeper
from services.queue import JobLease
from services.redis import redis_client

# The deadline a lease records for a job without a timeout of its own.
_NO_TIMEOUT_DEADLINE = 24 * 3600


class LeasedWorker(SimpleWorker):
    """SimpleWorker (runs jobs in its own process, so loaded models stay between jobs) that
    holds a ``JobLease`` on each job while it runs it: if the worker is killed, the lease
    lapses within ``lease_seconds`` and the sweep fails the job's run."""

    lease_seconds = 30.0

    def execute_job(self, job, queue):
        timeout = job.timeout if job.timeout and job.timeout > 0 else _NO_TIMEOUT_DEADLINE
        with JobLease(self.connection, job.id, timeout, self.lease_seconds):
            super().execute_job(job, queue)


@click.command("worker")
@click.option("--queue", "queues", multiple=True, default=["default"], show_default=True)
@with_appcontext
def worker_cli(queues):
    """Run an RQ worker with the app context, and the periodic sweep of stale runs."""
    app = current_app._get_current_object()
    client = redis_client(app)
    if client is None:
        raise click.ClickException(
            "REDIS_URL is not set: the embedded default runs jobs inside the web process."
        )
    if not (app.config.get("PUBLIC_BASE_URL") or app.config.get("SERVER_NAME")):
        # Outside a request there is no host to build file URLs with: runs that make files
        # would fail one by one. Say so once, at start.
        raise click.ClickException(
            "PUBLIC_BASE_URL is not set: the worker answers the files runs make as URLs on "
            "this service and needs its public address, e.g. "
            "PUBLIC_BASE_URL=https://svc.example.com."
        )
    worker = LeasedWorker(
        [Queue(name, connection=client) for name in queues],
        connection=client,
        maintenance_interval=int(app.config["RQ_MAINTENANCE_SECONDS"]),
    )
    worker.lease_seconds = float(app.config["JOB_LEASE_SECONDS"])
    sweeper.start_maintenance(app)
    worker.work(with_scheduler=True)
