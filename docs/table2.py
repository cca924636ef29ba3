#!/usr/bin/env python3
"""Runs `lagom compare` on the Lagom paper's Table 2 workloads and prints docs/RESULTS.md's tables.

    python3 docs/table2.py build/bin/lagom > /tmp/table2.md      # every row (about an hour)
    python3 docs/table2.py build/bin/lagom --only fsdp,ep         # the fast rows
    python3 docs/table2.py build/bin/lagom --ablation             # §3b, the search ablations
    python3 docs/table2.py build/bin/lagom --breakdown            # §2, Phi-2 FSDP's collectives
    python3 docs/table2.py build/bin/lagom --predictions          # docs/VALIDATION.md §3

Each row is one `lagom compare ... --json` (commands printed beside the tables); the runs are
deterministic, so the same lagom gives the same tables byte for byte. The raw JSON of every run
goes to --raw DIR when given.
"""
import argparse
import json
import pathlib
import subprocess
import sys

WORKLOADS = [
    # (family, model, parallel, mbs, gbs, extra)
    ("fsdp", "phi-2", "fsdp=8", 2, 16, []),
    ("fsdp", "phi-2", "fsdp=16", 2, 32, []),
    ("fsdp", "llama3-8b", "fsdp=8", 1, 16, ["--seq", "4096"]),
    ("fsdp", "llama3-8b", "fsdp=16", 1, 32, ["--seq", "4096"]),
    ("fsdp", "mpt-7b", "fsdp=8", 1, 16, []),
    ("fsdp", "mpt-7b", "fsdp=16", 1, 32, []),
    ("tp", "phi-2", "tp=8", 8, 512, ["--overlap", "domino"]),
    ("tp", "phi-2", "tp=8,dp=2", 8, 512, ["--overlap", "domino"]),
    ("tp", "llama3-8b", "tp=8", 4, 256, ["--recompute", "--overlap", "domino"]),
    ("tp", "llama3-8b", "tp=8,dp=2", 4, 256, ["--recompute", "--overlap", "domino"]),
    ("tp", "mpt-7b", "tp=8", 2, 256, ["--overlap", "domino"]),
    ("tp", "mpt-7b", "tp=8,dp=2", 2, 256, ["--overlap", "domino"]),
    ("ep", "deepseek-moe-16b", "ep=8,zero=1", 2, 16, ["--recompute", "--overlap", "two-batch"]),
    ("ep", "olmoe-1b-7b", "ep=8", 2, 16, ["--overlap", "two-batch"]),
]


def gpus(parallel):
    n = 1
    for part in parallel.split(","):
        if "=" in part and part.split("=")[0] in ("fsdp", "tp", "dp", "pp", "ep"):
            n *= int(part.split("=")[1])
    return n


def compare(lagom, w, cluster, space, methods, env, raw, flags=()):
    family, model, parallel, mbs, gbs, extra = w
    nodes = max(1, gpus(parallel) // 8)
    cmd = [lagom, "compare", "--model", model, "--parallel", parallel, "--mbs", str(mbs),
           "--gbs", str(gbs), "--cluster", cluster, "--nodes", str(nodes), "--space", space,
           "--methods", ",".join(methods), "--json"] + extra + env + list(flags)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    if raw:
        name = "-".join([model, parallel.replace("=", "").replace(",", "_"), cluster, space]
                        + [e.split("=")[-1] for e in env if "=" in e]
                        + [f.lstrip("-") for f in flags] + methods[-1:])
        (pathlib.Path(raw) / f"{name}.json").write_text(out)
    rows = json.loads(out)["rows"]
    return {r["method"]: r for r in rows}


def simulate(lagom, w, cluster):
    family, model, parallel, mbs, gbs, extra = w
    nodes = max(1, gpus(parallel) // 8)
    cmd = [lagom, "simulate", "--model", model, "--parallel", parallel, "--mbs", str(mbs),
           "--gbs", str(gbs), "--cluster", cluster, "--nodes", str(nodes), "--json",
           "--no-op-times"] + [e for e in extra if e != "--overlap" and e not in ("domino", "two-batch")]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def predictions(lagom):
    """VALIDATION.md §3: each Table 2 workload under NCCL's own choice on both clusters (the
    overlap the paper evaluates is off here: these are the plain schedules)."""
    print("| model | parallel | mbs | gbs | extra | cluster A: step, MFU, exposed comm | "
          "cluster B: step, MFU, exposed comm | memory per GPU |")
    print("|---|---|---:|---:|---|---|---|---:|")
    for w in WORKLOADS:
        family, model, parallel, mbs, gbs, extra = w
        shown = [e for e in extra if e != "--overlap" and e not in ("domino", "two-batch")]
        cells = []
        mem = 0
        for cluster in ("a40-nvlink", "a40-pcie"):
            d = simulate(lagom, w, cluster)
            mem = d["memory_per_gpu_bytes"]
            cells.append(f"{d['step_time_us'] / 1e3:.1f} ms, MFU {100 * d['mfu']:.1f}%, "
                         f"exposed comm {d['exposed_comm_us'] / 1e3:.1f} ms")
        print(f"| `{model}` | `{parallel}` | {mbs} | {gbs} | "
              f"{' '.join('`' + e + '`' for e in [' '.join(shown)] if e)} | {cells[0]} | "
              f"{cells[1]} | {mem / 1e9:.1f} GB |")
        sys.stdout.flush()


K_VALUES = (1, 2, 4, 8)
RANDOM_BUDGET = 500


def ablation(lagom, families, raw):
    """RESULTS.md §3b: what Lagom's priority H and its walk add over simpler rules, in the full
    space on cluster A with NCCL's 8 channels (the paper's baseline)."""
    env = ["--nccl-env", "NCCL_MIN_CTAS=8"]
    print("| workload | GPUs | Lagom | round-robin order | lock-step walk | "
          "NCCL's subspace, no switch | no parking | no switch | best fixed-nc:K | "
          "best nccl-max-ctas:K | evaluations L / RR / LS / no switch |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for w in WORKLOADS:
        if w[0] not in families:
            continue
        methods = (["nccl", "lagom", "lagom-roundrobin"] + [f"fixed-nc:{k}" for k in K_VALUES]
                   + [f"nccl-max-ctas:{k}" for k in K_VALUES])
        r = compare(lagom, w, "a40-nvlink", "full", methods, env, raw)
        ls = compare(lagom, w, "a40-nvlink", "full", ["lagom"], env, raw,
                     ["--lagom-walk", "lockstep"])["lagom"]
        ns = compare(lagom, w, "a40-nvlink", "full", ["lagom"], env, raw,
                     ["--lagom-subspace", "nccl", "--lagom-switch", "off"])["lagom"]
        np_ = compare(lagom, w, "a40-nvlink", "full", ["lagom"], env, raw,
                      ["--lagom-no-park"])["lagom"]
        nw = compare(lagom, w, "a40-nvlink", "full", ["lagom"], env, raw,
                     ["--lagom-switch", "off"])["lagom"]
        best = lambda prefix: max(((r[f"{prefix}:{k}"]["speedup_vs_nccl"], k) for k in K_VALUES))
        fx, fk = best("fixed-nc")
        mx, mk = best("nccl-max-ctas")
        sp = lambda x: f"{x['speedup_vs_nccl']:.3f}x"
        print(f"| `{w[1]}` `{w[2]}` | {gpus(w[2])} | {sp(r['lagom'])} | "
              f"{sp(r['lagom-roundrobin'])} | {sp(ls)} | {sp(ns)} | {sp(np_)} | {sp(nw)} | "
              f"{fx:.3f}x (K={fk}) | {mx:.3f}x (K={mk}) | {r['lagom']['evaluations']} / "
              f"{r['lagom-roundrobin']['evaluations']} / {ls['evaluations']} / "
              f"{nw['evaluations']} |")
        sys.stdout.flush()


def breakdown(lagom):
    """RESULTS.md §2: Phi-2 FSDP on one node of cluster A, the per-layer all-gather and
    reduce-scatter under NCCL, AutoCCL and Lagom (the paper's Figure 8a/b)."""
    w = WORKLOADS[0]
    assert w[1:3] == ("phi-2", "fsdp=8")

    def cfg(c, full):
        k = c["config"]
        s = f"NC {k['nchannels']}"
        return s + (f", NT {k['nthreads']}, C {k['chunk_bytes'] // 1024} KiB" if full else "")

    print("| baseline, space | | NCCL | AutoCCL | Lagom |\n|---|---|---|---|---|")
    for label, space, env in (("2 channels, `nccl`", "nccl", []),
                              ("8 channels, `nccl`", "nccl", ["--nccl-env", "NCCL_MIN_CTAS=8"]),
                              ("2 channels, `full`", "full", []),
                              ("8 channels, `full`", "full", ["--nccl-env", "NCCL_MIN_CTAS=8"])):
        r = compare(lagom, w, "a40-nvlink", space, ["nccl", "autoccl", "lagom"], env, None)
        full = space == "full"
        for coll, calls, name in (("AllGather", 60, "all-gather"),
                                  ("ReduceScatter", 30, "reduce-scatter")):
            c = {m: next(x for x in r[m]["plan"] if x["coll"] == coll and x["calls"] == calls)
                 for m in ("nccl", "autoccl", "lagom")}
            cells = [f"{cfg(c[m], full)}: {c[m]['time_us'] / 1e3:.2f} ms"
                     for m in ("nccl", "autoccl", "lagom")]
            print(f"| {label if name == 'all-gather' else ''} | {name} | " + " | ".join(cells) + " |")
        step = lambda m: (f"{r[m]['step_time_us'] / 1e3:,.1f} ms"
                          + ("" if m == "nccl" else f" ({r[m]['speedup_vs_nccl']:.3f}x)"))
        print(f"| | step | {step('nccl')} | {step('autoccl')} | {step('lagom')} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lagom")
    ap.add_argument("--only", default="fsdp,tp,ep")
    ap.add_argument("--raw")
    ap.add_argument("--rows", help="only the workloads whose 'model parallel' contains this "
                    "text (e.g. 'phi-2 tp=8')")
    ap.add_argument("--single-node", action="store_true",
                    help="only the workloads of one node (8 GPUs)")
    ap.add_argument("--no-min-ctas", action="store_true", help="skip table 1b")
    ap.add_argument("--breakdown", action="store_true",
                    help="print docs/RESULTS.md §2 (Phi-2 FSDP's collectives) instead")
    ap.add_argument("--ablation", action="store_true",
                    help="print docs/RESULTS.md §3b (the ablations of Lagom's search) instead")
    ap.add_argument("--predictions", action="store_true",
                    help="print docs/VALIDATION.md §3 (lagom simulate of each workload) instead")
    a = ap.parse_args()
    if a.predictions:
        predictions(a.lagom)
        return
    families = a.only.split(",")
    if a.raw:
        pathlib.Path(a.raw).mkdir(parents=True, exist_ok=True)
    if a.ablation:
        ablation(a.lagom, families, a.raw)
        return
    if a.breakdown:
        breakdown(a.lagom)
        return
    header = ("| workload | GPUs | cluster | NCCL step (ms) | AutoCCL | Lagom | AutoCCL, full | "
              "Lagom, full | random, full | evaluations A / L (A / L / R full) |")
    sep = "|---|---:|---|---:|---:|---:|---:|---:|---:|---|"
    tables = [("1a", [], ["a40-nvlink", "a40-pcie"])]
    if not a.no_min_ctas:
        tables.append(("1b", ["--nccl-env", "NCCL_MIN_CTAS=8"], ["a40-nvlink"]))
    for name, env, clusters in tables:
        print(f"\n### Table {name}{' (' + ' '.join(env) + ')' if env else ''}\n")
        print(header)
        print(sep)
        for w in WORKLOADS:
            if w[0] not in families or (a.rows and a.rows not in f"{w[1]} {w[2]}"):
                continue
            if a.single_node and gpus(w[2]) != 8:
                continue
            for cluster in clusters:
                # Random-500 everywhere: the two-node TP rows fold to one rank on cluster A
                # (whose GPUs are alike) and to one replica's 8 on cluster B, 0.02-0.1 s per
                # simulation.
                with_random = True
                m_nccl = ["nccl", "autoccl", "lagom"]
                d = compare(a.lagom, w, cluster, "nccl", m_nccl, env, a.raw)
                f = compare(a.lagom, w, cluster, "full", m_nccl, env, a.raw)
                if with_random:  # its own run: --budget bounds every method of a run
                    f["random"] = compare(a.lagom, w, cluster, "full", ["random"], env, a.raw,
                                          ["--budget", str(RANDOM_BUDGET)])["random"]
                sp = lambda r, m: f"{r[m]['speedup_vs_nccl']:.3f}x" if m in r else "–"
                ev = lambda r, m: str(r[m]["evaluations"]) if m in r else "–"
                print(f"| `{w[1]}` `{w[2]}` | {gpus(w[2])} | {cluster} | "
                      f"{d['nccl']['step_time_us'] / 1e3:.1f} | {sp(d, 'autoccl')} | "
                      f"{sp(d, 'lagom')} | {sp(f, 'autoccl')} | {sp(f, 'lagom')} | "
                      f"{sp(f, 'random')} | {ev(d, 'autoccl')} / {ev(d, 'lagom')} "
                      f"({ev(f, 'autoccl')} / {ev(f, 'lagom')} / {ev(f, 'random')}) |")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
