"""The local engines' output quality on labelled samples, each beside a plain baseline.

One figure per engine family (``bench/quality/<family>.py``), each measured on samples that
live in the repository (``bench/quality/data``, their sources in
``bench/quality/data/SOURCES.md``) or are made on the spot (pages rendered in three fonts at
two resolutions, speech made by the local voices): nothing is downloaded. Each family runs
the product's engine as a tool run does and a plain baseline on the same samples.

Prints a table and writes ``bench/results/quality.json``. ``--family`` picks families (by
default all). Exit status: 0 when every family was measured, 1 when one failed (its row
says why; the others are still measured), 2 on bad arguments. See bench/README.md.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import traceback
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, Python puts bench/ first on the path, where ``quality`` would be this
# file: the repository root goes there instead, and the families are ``bench.quality.*``.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

RESULTS_FILE = ROOT / "bench" / "results" / "quality.json"
# In the order the table shows them.
FAMILIES = (
    "sentiment", "summary", "keyphrases", "language", "spelling", "ocr", "speech", "model", "facts",
)  # fmt: skip


def _cell(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}{unit}" if unit else f"{value:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--family", action="append", choices=FAMILIES, help="measure only this family (repeat)"
    )
    args = parser.parse_args(argv)
    chosen = args.family or list(FAMILIES)

    figures, failures = [], {}
    for family in chosen:
        started = time.perf_counter()
        try:
            module = importlib.import_module(f"bench.quality.{family}")
            measured = module.measure()
        except Exception as error:  # one family's failure leaves the others measured
            failures[family] = f"{type(error).__name__}: {error}"
            traceback.print_exc(file=sys.stderr)
            continue
        seconds = time.perf_counter() - started
        figures.extend(measured)
        print(f"# {family}: measured in {seconds:.1f} s", file=sys.stderr)

    header = f"{'family':<12}{'metric':<36}{'engine':>10}{'baseline':>10}  {'samples':>7}  baseline"
    print(header)
    print("-" * len(header))
    for figure in figures:
        print(
            f"{figure.family:<12}{figure.metric:<36}{_cell(figure.engine, figure.unit):>10}"
            f"{_cell(figure.baseline, figure.unit):>10}  {figure.samples:>7}  "
            f"{figure.baseline_name}" + (f"; {figure.detail}" if figure.detail else "")
        )
    for family, reason in failures.items():
        print(f"{family:<12}FAILED: {reason}")

    RESULTS_FILE.parent.mkdir(parents=True, exist_ok=True)
    RESULTS_FILE.write_text(
        json.dumps(
            {"figures": [asdict(figure) for figure in figures], "failures": failures}, indent=2
        )
        + "\n"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
