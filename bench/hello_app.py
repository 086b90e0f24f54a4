"""The baseline of ``bench/api_overhead.py``: the smallest Flask JSON app.

Served with ``gunicorn bench.hello_app:app``; every product figure is read as a ratio to it.
"""

from flask import Flask

app = Flask(__name__)


@app.get("/hello")
def hello():
    """Answer a constant JSON object."""
    return {"hello": "world"}
