"""The app's Redis connection (None in the embedded default without REDIS_URL), and the
one-round-trip calls of the hot path."""

import os

import hiredis
import redis


def redis_client(app) -> redis.Redis | None:
    """The app's client. Its pool opens at most ``REDIS_MAX_CONNECTIONS``; a caller past them
    waits for one to be free (``REDIS_POOL_TIMEOUT`` at most), where redis-py's default pool
    would refuse at once ("Too many connections"): 500 followers of run streams in one web
    process, each reading its stream when woken, cut streams off mid-way."""
    if "redis" not in app.extensions:
        url = app.config.get("REDIS_URL")
        client = None
        if url:
            pool = redis.BlockingConnectionPool.from_url(
                url,
                max_connections=int(app.config.get("REDIS_MAX_CONNECTIONS", 200)),
                timeout=float(app.config.get("REDIS_POOL_TIMEOUT", 10.0)),
                socket_timeout=5,
                socket_connect_timeout=2,
            )
            client = redis.Redis(connection_pool=pool)
        app.extensions["redis"] = client
    return app.extensions["redis"]


def worker_connection(app) -> redis.Redis:
    """A client of its own for RQ's worker loop. RQ waits for a job with a blocking pop of
    minutes and raises its client's read timeout above that wait, but only for connections
    made after: on the app's client (5 s, and connections already pooled) an idle worker
    logged "Timeout reading from socket" every few seconds. Nothing here has connected yet."""
    return redis.Redis.from_url(app.config["REDIS_URL"], socket_connect_timeout=2)


class DirectConnections:
    """Connections of ``client``'s kind for the commands every request sends: packed by
    hiredis, sent once and read once.

    Through the client a call cost about twice the CPU (its pool checks each connection for
    unread data with a system call, and its retry and telemetry layers wrap every command).
    A call takes a connection from this object's own free list (or makes one) and puts it
    back after: there are never more connections than calls at once, whatever the number
    of threads or greenlets (each once kept a connection of its own: a greenlet per request
    left one behind each, and redis-py's pool refused more after a hundred). As the client
    does, a connection that fails is dropped and the call made once more on another (a
    connection left from before a Redis restart fails on first use); a second failure is
    raised (the API answers 503). A forked process starts with an empty list."""

    def __init__(self, client: redis.Redis):
        self.client = client
        self._free: list = []
        self._pid = os.getpid()

    def execute(self, *command):
        try:
            return self._once(command)
        except (redis.ConnectionError, redis.TimeoutError):
            return self._once(command)

    def _once(self, command: tuple):
        if self._pid != os.getpid():
            self._free, self._pid = [], os.getpid()
        try:
            connection = self._free.pop()
        except IndexError:
            pool = self.client.connection_pool
            connection = pool.connection_class(**pool.connection_kwargs)
        try:
            connection.send_packed_command([hiredis.pack_command(command)], check_health=False)
            response = connection.read_response()
        except redis.ResponseError:  # Redis's answer was an error: the connection is fine
            self._free.append(connection)
            raise
        except BaseException:  # a lost connection, or a call interrupted mid-reply
            connection.disconnect()
            raise
        self._free.append(connection)
        return response
