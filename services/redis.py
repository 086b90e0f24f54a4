"""The app's Redis connection (None in the embedded default without REDIS_URL)."""

import redis


def redis_client(app) -> redis.Redis | None:
    if "redis" not in app.extensions:
        url = app.config.get("REDIS_URL")
        app.extensions["redis"] = (
            redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2) if url else None
        )
    return app.extensions["redis"]
