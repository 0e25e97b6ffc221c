"""`make fuzz-models`: the differential checks on many generated models, with a fresh seed.

    python -m tests.models.fuzz_models [--seed S] [--count N] [--faults K] [--no-save]

Model i is `model_for_seed(S + i)`. Every model with a failing check (ours or IREE's) is saved
under tests/models/regressions/ as seed-<n>.onnx with a note seed-<n>.json (its failure classes
and details), which `make test` runs again. Prints per-check and per-failure-class counts, the
models per minute, the false alarms and the fault localization rate; with --json OUT, all of it.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import signal
import sys
import tempfile
import time
from pathlib import Path

import onnx

from .differential import IREE_SAYS, Check, ModelReport, check_model, kind_of_symbol
from .random_onnx import model_for_seed

REGRESSIONS = Path(__file__).resolve().parent / "regressions"


def save_regression(model: onnx.ModelProto, seed: int, report: ModelReport, folder: Path = REGRESSIONS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(folder / f"seed-{seed}.onnx"))
    bad = [c for c in report.checks if c.outcome in ("fail", "iree")]
    note = {"seed": seed, "ops": report.ops, "arith": report.arith, "dispatches": report.dispatches,
            "found": time.strftime("%Y-%m-%d"),
            "failures": [{"check": c.name, "outcome": c.outcome, "class": c.failure, "detail": c.detail}
                         for c in bad]}
    path = folder / f"seed-{seed}.json"
    path.write_text(json.dumps(note, indent=1) + "\n")
    return path


def summarize(reports: list[ModelReport], minutes: float) -> dict:
    per_check = collections.defaultdict(collections.Counter)
    classes = collections.Counter()
    for r in reports:
        for c in r.checks:
            per_check[c.name][c.outcome] += 1
            if c.outcome in ("fail", "iree"):
                classes[f"{c.outcome}:{c.failure}"] += 1
    faults = [c for r in reports for c in r.checks if c.name == "fault"]
    localized = sum(1 for c in faults if c.failure == "fault-localized")
    cannot = sum(1 for c in faults if c.failure == "fault-cannot-locate")
    return {
        "models": len(reports), "minutes": round(minutes, 2),
        "models_per_minute": round(len(reports) / minutes, 2) if minutes else None,
        "false_alarms": sum(1 for r in reports for c in r.checks if c.name == "trace-clean" and c.outcome == "fail"),
        "faults": len(faults), "localized": localized, "cannot_locate": cannot,
        "localization_rate": round(localized / len(faults), 3) if faults else None,
        "per_check": {k: dict(v) for k, v in per_check.items()},
        "failure_classes": dict(classes.most_common()),
    }


def relabel(c: Check, arith: str) -> Check:
    """A check recorded by an older version of the harness, in today's classes."""
    m = re.match(r"#\d+ (\S+) ", c.detail)
    if c.failure.startswith("trace-false-alarm:") and m:
        c.failure = "trace-false-alarm:" + kind_of_symbol(m[1])
    if c.outcome == "iree" and c.failure in ("iree-run", "iree-compile") and not IREE_SAYS.search(c.detail):
        c.outcome, c.failure = "fail", c.failure.replace("iree-", "") + "-error"
    against = re.match(r"(?:per dispatch )?vs ([\w-]+)", c.detail)
    if c.name in ("simulate-check", "run-npu") and c.failure.endswith("-exit1") and against:
        c.failure += f":vs-{against[1]}"
    # the first departing line named onnxruntime, so IREE's own build agreed (it is printed before)
    if c.name in ("simulate-check", "run-npu") and c.failure.endswith(":vs-onnxruntime") and arith == "int8":
        c.outcome, c.failure = "iree", "iree-vs-ort-int8-rounding"
    return c


def summarize_jsonl(path: Path) -> dict:
    reports = []
    for line in path.read_text().splitlines():
        d = json.loads(line)
        checks = [relabel(Check(**c), d["arith"]) for c in d.pop("checks")]
        d.pop("seed", None)
        reports.append(ModelReport(**d, checks=checks))
    return summarize(reports, 0.0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=None, help="first model's seed (default: from the clock)")
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--faults", type=int, default=None, help="float dispatches perturbed per model (default all)")
    ap.add_argument("--no-save", action="store_true", help="do not write regression files")
    ap.add_argument("--json", type=Path, help="write every model's report and the summary here")
    ap.add_argument("--jsonl", type=Path, help="append each model's report here as it finishes")
    ap.add_argument("--summarize", type=Path, metavar="JSONL",
                    help="instead: print the counts of a --jsonl file (runs appended to one file add up)")
    args = ap.parse_args(argv)
    if args.summarize:
        print(json.dumps(summarize_jsonl(args.summarize), indent=1))
        return 0
    # SIGTERM unwinds like Ctrl-C: the running CLI child's group is killed, the scratch folder removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    seed = args.seed if args.seed is not None else int(time.time()) % 1_000_000 * 1000
    print(f"seed {seed}, {args.count} models", flush=True)
    reports, start = [], time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz-models-") as tmp:
        for i in range(args.count):
            model = model_for_seed(seed + i)
            path = Path(tmp) / f"seed-{seed + i}.onnx"
            onnx.save(model, str(path))
            r = check_model(path, Path(tmp) / "work", faults=args.faults)
            reports.append(r)
            if args.jsonl:
                with args.jsonl.open("a") as f:
                    f.write(json.dumps({"seed": seed + i, **r.to_dict()}) + "\n")
            bad = [f"{c.name}={c.outcome}:{c.failure}" for c in r.checks if c.outcome in ("fail", "iree")]
            print(f"[{i + 1}/{args.count}] seed {seed + i} ({r.ops}): {', '.join(bad) or 'ok'}", flush=True)
            if bad and not args.no_save:
                save_regression(model, seed + i, r)
    summary = summarize(reports, (time.perf_counter() - start) / 60)
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"seed": seed, "summary": summary,
                                         "models": [r.to_dict() for r in reports]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
