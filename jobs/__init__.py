"""RQ job functions, one module per domain (``jobs/<domain>.py``), run by
``flask --app app worker``. Each job loads what it needs by id, works, commits once and logs
with its job id. Queued tool runs, workflow steps and webhook deliveries arrive here with
their issues; the light tools of the starter catalogue run inline in the request."""
