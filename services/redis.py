"""The app's Redis connection (None in the embedded default without REDIS_URL), and the
one-round-trip calls of the hot path."""

import os
import threading

import hiredis
import redis


def redis_client(app) -> redis.Redis | None:
    if "redis" not in app.extensions:
        url = app.config.get("REDIS_URL")
        app.extensions["redis"] = (
            redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2) if url else None
        )
    return app.extensions["redis"]


def worker_connection(app) -> redis.Redis:
    """A client of its own for RQ's worker loop. RQ waits for a job with a blocking pop of
    minutes and raises its client's read timeout above that wait, but only for connections
    made after: on the app's client (5 s, and connections already pooled) an idle worker
    logged "Timeout reading from socket" every few seconds. Nothing here has connected yet."""
    return redis.Redis.from_url(app.config["REDIS_URL"], socket_connect_timeout=2)


class ThreadConnections:
    """A connection of ``client``'s pool per thread (and process), for the commands every
    request sends: packed by hiredis, sent once and read once.

    Through the client a call cost about twice the CPU (its pool checks each connection for
    unread data with a system call, and its retry and telemetry layers wrap every command).
    As the client does, a connection that fails is replaced and the call made once more (a
    connection left from before a Redis restart fails on first use); a second failure is
    raised (the API answers 503)."""

    def __init__(self, client: redis.Redis):
        self.client = client
        self._own = threading.local()

    def execute(self, *command):
        try:
            return self._once(command)
        except (redis.ConnectionError, redis.TimeoutError):
            return self._once(command)

    def _once(self, command: tuple):
        connection = self._connection()
        try:
            connection.send_packed_command([hiredis.pack_command(command)], check_health=False)
            return connection.read_response()
        except (redis.ConnectionError, redis.TimeoutError):
            connection.disconnect()
            raise

    def _connection(self) -> "redis.connection.AbstractConnection":
        own = self._own
        if getattr(own, "pid", None) != os.getpid():  # a new thread, or a forked process
            own.connection = self.client.connection_pool.make_connection()
            own.pid = os.getpid()
        return own.connection
