"""The queues a job can go to, and what the queue can tell of a job (``job_state``).

Both dispatchers (``services.queue.rq``, ``services.queue.in_process``) know the same queues
and answer the same three states.
"""

# Two kinds of queue, each with its own kind of worker (the Procfile's ``worker`` and
# ``worker-io``). The compute queues: local engines that keep a core busy (OCR, speech, the
# embedded model, ffmpeg, images), one job at a time per worker process. The I/O queues: runs
# that wait on the network (a model provider's answer, a webhook receiver), hundreds at once
# per worker process (``flask worker --io``: greenlets). A tool's run goes where its engine
# says (``Engine.waits_on_network``, read by ``queue_for``).
DEFAULT_QUEUE = "default"
# The site's runs: workers take them only when the API's queue is empty, so that anonymous
# traffic never delays API clients.
WEB_QUEUE = "web"
IO_QUEUE = "io"
IO_WEB_QUEUE = "io-web"
CPU_QUEUES = (DEFAULT_QUEUE, WEB_QUEUE)
IO_QUEUES = (IO_QUEUE, IO_WEB_QUEUE)
QUEUES = CPU_QUEUES + IO_QUEUES


def queue_for(waits_on_network: bool, *, site: bool = False) -> str:
    """The queue of a job that waits on the network or computes, for the API (and webhooks,
    workflows) or for the site's visitors (``site``), whose jobs wait behind the API's."""
    if waits_on_network:
        return IO_WEB_QUEUE if site else IO_QUEUE
    return WEB_QUEUE if site else DEFAULT_QUEUE


# What the queue knows of a job (``job_state``).
WAITING = "waiting"
WORKING = "working"
LOST = "lost"
