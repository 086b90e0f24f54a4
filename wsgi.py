"""The web command's WSGI app (the Procfile's ``gunicorn ... wsgi:app``; each worker imports
it once).

What the app loads at start (its modules, the tool catalogue, the engines' tables: about
200,000 objects) lives as long as the worker, yet every full collection of the cyclic
garbage collector walked it again: a pause of about 70 ms, every few seconds under load,
during which the worker answered nobody and accepted no connection (the tool run's p99 was
60 to 75 ms against 9 ms for whoami, and a burst of new connections could all land on the
other worker; docs/contributing/benchmarks/api-overhead.md). Frozen, those objects are left
out of every collection, and a full one walks only what requests made since (about 10,000
objects, 1.5 ms). The garbage of the start is collected first, so that none of it is kept
for good.
"""

import gc

from app import create_app

app = create_app()

gc.collect()
gc.freeze()
