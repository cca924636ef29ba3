#!/usr/bin/env python3
"""Prints docs/RESULTS.md's sensitivity table from `lagom sensitivity --json` reports.

    lagom sensitivity --model phi-2 --parallel fsdp=8 ... --json > phi2.json
    python3 docs/sensitivity_table.py 'Phi-2 fsdp=8, A=phi2.json' ... [--top 6]

One block of rows per report: the priors whose scaling moves a method's speedup over NCCL the
most, with NCCL's step change and each method's speedup at each factor.
"""
import argparse
import json


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reports", nargs="+", help="LABEL=FILE")
    ap.add_argument("--top", type=int, default=6)
    a = ap.parse_args()
    print("| workload (baseline) | prior | value | x0.5: NCCL step, speedups | x1.5: NCCL step, speedups |")
    print("|---|---|---:|---|---|")
    for spec in a.reports:
        label, path = spec.rsplit("=", 1)
        d = json.load(open(path))
        methods = d["methods"]
        base = d["baseline"]
        base_s = ", ".join(f"{m} {s:.3f}x" for m, s in zip(methods, base["speedup_vs_nccl"]))
        first = True
        for p in d["priors"][: a.top]:
            cells = []
            for o in p["scaled"]:
                if "refused" in o:
                    cells.append("refused (out of range)")
                    continue
                step = 100 * (o["nccl_step_time_us"] / base["nccl_step_time_us"] - 1)
                sp = ", ".join(f"{s:.3f}x" for s in o["speedup_vs_nccl"])
                cells.append(f"{step:+.1f}%, {sp}")
            head = f"{label} ({base_s})" if first else ""
            first = False
            print(f"| {head} | `{p['field']}` | {p['value']:.4g} | {cells[0]} | {cells[1]} |")
        quiet = sum(1 for p in d["priors"] if p["speedup_swing"] < 0.001 and p["step_swing"] < 0.001)
        print(f"| | {quiet} of {len(d['priors'])} priors move nothing by 0.1% | | | |")


if __name__ == "__main__":
    main()
