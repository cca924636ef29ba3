#!/usr/bin/env python3
"""Runs `lagom validate --published tests/data/published-runs --json` and prints docs/VALIDATION.md
§4's tables: one per file (run, published, predicted, error) and the summary.

    python3 docs/published_table.py build/bin/lagom > /tmp/published.md    # about 90 s on 2 cores

The runs are deterministic, so the same lagom gives the same tables byte for byte.
"""
import json
import pathlib
import subprocess
import sys


def fmt(x):
    return f"{x:.4g}" if x < 1000 else f"{x:,.0f}"


def main():
    lagom = sys.argv[1]
    root = pathlib.Path(__file__).resolve().parent.parent
    out = subprocess.run([lagom, "validate", "--published", str(root / "tests/data/published-runs"),
                          "--json", "-j", "2"], capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(out.stderr)
    j = json.loads(out.stdout)
    print("| file | metric | runs | median \\|error\\| | median (signed) | worst \\|error\\| | within 5% | within 15% |")
    print("|---|---|---|---|---|---|---|---|")
    for f in j["files"] + [{"name": "**all**", "metric": "", "summary": j["summary"]}]:
        s = f["summary"]
        print(f"| {f['name']} | {f['metric']} | {s['runs']} | {100 * s['median_abs_error']:.1f}% | "
              f"{100 * s['median_error']:+.1f}% | {100 * s['worst_abs_error']:.1f}% | "
              f"{s['within_5pct']} | {s['within_15pct']} |")
    for f in j["files"]:
        print(f"\n#### {f['name']} ({f['metric']})\n")
        print("| run | published | predicted | error |")
        print("|---|---|---|---|")
        for r in f["runs"]:
            if "failed" in r:
                print(f"| {r['run']} | {fmt(r['published'])} | failed | {r['failed']} |")
            else:
                print(f"| {r['run']} | {fmt(r['published'])} | {fmt(r['predicted'])} | "
                      f"{100 * r['error']:+.1f}% |")


if __name__ == "__main__":
    main()
