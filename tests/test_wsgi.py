"""The web command's entry point (``wsgi:app``) leaves what the app loaded out of the
garbage collector's walks (wsgi.py says why)."""

import json
import subprocess
import sys

from tests.helpers import ROOT, deployment_env

PROBE = """
import gc, json
import wsgi
gc.collect()
print(json.dumps({"frozen": gc.get_freeze_count(), "tracked": len(gc.get_objects())}))
"""


def test_the_loaded_app_is_frozen_out_of_the_collectors_walks():
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=deployment_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    # The app's modules, catalogue and engines: tens of thousands of objects, all frozen;
    # a full collection then walks a small remainder.
    assert found["frozen"] > 50_000
    assert found["tracked"] < found["frozen"] / 20
