"""A worker's claim on the jobs it runs: a short-lived Redis key per job, kept renewed.

An RQ worker started by ``flask worker`` holds a ``JobLease`` while it runs a job (the I/O
worker, running hundreds at once, keeps them all with one ``LeaseKeeper``), so that a worker
killed mid-job is known within the lease's lifetime (RQ's own record of a started job outlives
a dead SimpleWorker by the job's whole timeout). ``services.queue.rq`` reads the lease in
``job_state``.
"""

import contextlib
import logging
import math
import threading
import time

import redis

log = logging.getLogger(__name__)


def lease_key(job_id: str) -> str:
    return f"job-lease:{job_id}"


class JobLease:
    """A worker's claim on the job it runs: a Redis key holding the job's deadline (a Unix
    time), set before the job starts, renewed by a thread every third of ``seconds`` (set
    again if it went missing, say while Redis restarted) and deleted when the job ends."""

    def __init__(self, client: redis.Redis, job_id: str, timeout: float, seconds: float):
        self.redis = client
        self.key = lease_key(job_id)
        self.deadline = time.time() + timeout
        self.seconds = seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep, name=f"lease-{job_id}", daemon=True)

    def __enter__(self) -> "JobLease":
        self._renew()
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()
        try:
            self.redis.delete(self.key)
        except redis.RedisError:  # it expires by itself
            log.warning("could not drop the lease %s", self.key)

    def _keep(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            try:
                self._renew()
            except redis.RedisError as error:
                log.warning("could not renew the lease %s: %s", self.key, error)

    def _renew(self) -> None:
        self.redis.set(self.key, repr(self.deadline), ex=math.ceil(self.seconds))


class LeaseKeeper:
    """The leases of the many jobs one process runs at once (the I/O worker), kept
    together: each set in the round trip that starts its job (``hold``, into the caller's
    pipeline), all renewed in one round trip every third of ``seconds``, and dropped in
    batches every ``drop_every`` seconds (``drop``), by one loop (``keep``: a greenlet of
    that process). A dropped lease outlives its job by at most ``drop_every`` seconds,
    which changes nothing: the sweep fails only runs that have not ended."""

    drop_every = 0.5

    def __init__(self, client: redis.Redis, seconds: float):
        self.redis = client
        self.seconds = seconds
        self._deadlines: dict[str, float] = {}
        self._dropped: set[str] = set()
        self._stop = threading.Event()

    def __len__(self) -> int:
        return len(self._deadlines)

    def hold(self, job_id: str, timeout: float, pipeline: redis.client.Pipeline) -> None:
        deadline = time.time() + timeout
        self._deadlines[job_id] = deadline
        self._dropped.discard(job_id)  # a job run again before its last lease was dropped
        pipeline.set(lease_key(job_id), repr(deadline), ex=math.ceil(self.seconds))

    def drop(self, job_id: str) -> None:
        if self._deadlines.pop(job_id, None) is not None:
            self._dropped.add(job_id)

    def keep(self) -> None:
        """Renew and drop until ``stop``; then drop what is left."""
        renewed = time.monotonic()
        while not self._stop.wait(self.drop_every):
            try:
                if time.monotonic() - renewed >= self.seconds / 3:
                    renewed = time.monotonic()
                    self._write(renew=True)
                else:
                    self._write(renew=False)
            except redis.RedisError as error:  # the next pass tries again
                log.warning("could not renew or drop %d lease(s): %s", len(self), error)
        with contextlib.suppress(redis.RedisError):
            self._write(renew=False)

    def stop(self) -> None:
        self._stop.set()

    def _write(self, *, renew: bool) -> None:
        dropped, self._dropped = self._dropped, set()
        held = list(self._deadlines.items()) if renew else []
        if not dropped and not held:
            return
        pipe = self.redis.pipeline(transaction=False)
        for job_id, deadline in held:
            pipe.set(lease_key(job_id), repr(deadline), ex=math.ceil(self.seconds))
        if dropped:
            pipe.delete(*(lease_key(job_id) for job_id in dropped))
        try:
            pipe.execute()
        except redis.RedisError:
            self._dropped |= dropped  # dropped on the next pass (else they expire)
            raise
