"""A throwaway redis-server on its own loopback port, for tests that stop, restart, flush
or replace Redis (never the machine's shared one)."""

import socket
import subprocess
import time

import redis


class RedisServer:
    """``start()``, then ``url``; ``stop()`` (SIGTERM; nothing is saved, so a start after
    it is an empty Redis, as a restart without persistence)."""

    def __init__(self, aof_dir: str | None = None):
        # With ``aof_dir``, an append-only file there (fsync every second, as production's
        # Redis is set up): a restart keeps what was written.
        self.aof_dir = aof_dir
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
            + (
                ["--appendonly", "yes", "--appendfsync", "everysec", "--dir", self.aof_dir]
                if self.aof_dir
                else ["--appendonly", "no"]
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)
        client.close()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
