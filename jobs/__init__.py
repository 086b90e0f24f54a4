"""RQ job functions, one module per domain (``jobs/<domain>.py``), run by
``flask --app app worker`` (or the in-process worker of the embedded default). Each job
loads what it needs by id, works, commits and logs with the run or event id."""
