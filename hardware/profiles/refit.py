#!/usr/bin/env python3
"""Re-derives the calibrated built-in profiles from their recorded priors and the real logs.

Run after a change to the collective model (its fitted numbers must be the model's own fit):

    python3 hardware/profiles/refit.py build/bin/lagom

For h100-sxm and a100-sxm it restores every fitted number to the prior its source records
("lagom calibrate fit: ... (prior <value>: <the prior's source>)"), fits that profile to the logs
the built-in names in its 'calibration' notes with `lagom calibrate fit`, and writes the result
back with the profile's own description. h200-sxm takes h100-sxm's collective section (same die,
no H200 log). Tests check that each built-in is the fit of its priors (tests/calibrate/fit_test.cpp).
"""
import json
import pathlib
import re
import subprocess
import sys
import tempfile
from collections import OrderedDict

HERE = pathlib.Path(__file__).resolve().parent
FITS = {
    "h100-sxm": [("01-h100x8-nvswitch-allreduce-nccl2.29", "dgx-h100", 1),
                 ("02-h100x8-nvswitch-allgather-nccl2.29", "dgx-h100", 1),
                 ("06-h100-p5-2nodes-efa-allreduce-nccl2.22.3-runA", "aws-p5", 2)],
    "a100-sxm": [("12-a100x8-nvswitch-allreduce-1proc", "dgx-a100", 1)],
}
PRIOR = re.compile(r"^lagom calibrate fit.*? \(prior ([-+0-9.eE]+): (.*)\)$", re.S)


def restore(node):
    """Puts every fitted {"value", "source"} back to the prior its source records."""
    if isinstance(node, dict):
        if set(node) == {"value", "source"} and isinstance(node["source"], str):
            m = PRIOR.match(node["source"])
            if m:
                node["value"] = float(m.group(1))
                node["source"] = m.group(2)
            return
        for v in node.values():
            restore(v)


def refit(lagom, name):
    path = HERE / f"{name}.json"
    built = json.loads(path.read_text(), object_pairs_hook=OrderedDict)
    prior = json.loads(path.read_text(), object_pairs_hook=OrderedDict)
    restore(prior)
    prior["calibration"] = [c for c in prior["calibration"]
                            if not c.startswith(("lagom ", "residuals "))]
    if not prior["calibration"]:
        prior["calibration"] = ["not calibrated"]
    with tempfile.TemporaryDirectory() as tmp:
        prior_path = pathlib.Path(tmp) / "prior.json"
        out_path = pathlib.Path(tmp) / "fit.json"
        prior_path.write_text(json.dumps(prior, indent=1) + "\n")
        cmd = [lagom, "calibrate", "fit", "--profile", str(prior_path), "-o", str(out_path),
               "--cluster", FITS[name][0][1]]
        for log, cluster, nodes in FITS[name]:
            cmd += ["--nccl-tests", f"builtin:{log}@{cluster}:{nodes}"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        fitted = json.loads(out_path.read_text(), object_pairs_hook=OrderedDict)
    fitted["name"] = built["name"]
    fitted["description"] = built["description"]
    path.write_text(json.dumps(fitted, indent=1) + "\n")
    return fitted


def main():
    lagom = sys.argv[1] if len(sys.argv) > 1 else "build/bin/lagom"
    h100 = None
    for name in FITS:
        fitted = refit(lagom, name)
        h100 = fitted if name == "h100-sxm" else h100
        print(f"{name}: " + "; ".join(fitted["calibration"]))
    path = HERE / "h200-sxm.json"
    h200 = json.loads(path.read_text(), object_pairs_hook=OrderedDict)
    h200["collective"] = h100["collective"]
    h200["calibration"] = [c for c in h200["calibration"] if c.startswith("collective parameters")]
    h200["calibration"] += [c for c in h100["calibration"]]
    path.write_text(json.dumps(h200, indent=1) + "\n")
    print("h200-sxm: collective section copied from h100-sxm")


if __name__ == "__main__":
    main()
