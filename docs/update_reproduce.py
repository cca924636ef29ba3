#!/usr/bin/env python3
"""Regenerates docs/RESULTS.md §R and docs/reproduce.csv from `lagom reproduce all`.

    python3 docs/update_reproduce.py build/bin/lagom      # about 15 minutes on 2 cores
    python3 docs/update_reproduce.py build/bin/lagom --from OUT.md --csv OUT.csv
                                                          # from a run already made

The section sits between the markers <!-- reproduce:begin --> and <!-- reproduce:end -->; the
rest of RESULTS.md is left as it is. The run is deterministic, so the same lagom gives the same
section byte for byte.
"""
import argparse
import pathlib
import re
import shutil
import subprocess

DOCS = pathlib.Path(__file__).resolve().parent
BEGIN, END = "<!-- reproduce:begin -->", "<!-- reproduce:end -->"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lagom")
    ap.add_argument("--from", dest="source", help="markdown of a `lagom reproduce all` run")
    ap.add_argument("--csv", help="its --csv file")
    a = ap.parse_args()
    if a.source:
        text = pathlib.Path(a.source).read_text()
        shutil.copyfile(a.csv, DOCS / "reproduce.csv")
    else:
        text = subprocess.run([a.lagom, "reproduce", "all", "--csv", str(DOCS / "reproduce.csv")],
                              check=True, capture_output=True, text=True).stdout
    lines = text.splitlines()
    assert lines[0].startswith("# lagom "), lines[0]
    body = "\n".join(lines[1:]).strip()
    body = re.sub(r"^## lagom reproduce (\w+)", r"### `lagom reproduce \1`", body, flags=re.M)
    counts = {"reproduced": 0, "direction only": 0, "not reproduced": 0}
    for m in re.finditer(r"^\| [^|]* \| [^|]* \| [^|]* \| [^|]* \| (reproduced|direction only|not "
                         r"reproduced) \|", body, flags=re.M):
        counts[m.group(1)] += 1
    section = (f"{BEGIN}\n## R. The paper's experiments, judged (`lagom reproduce all`)\n\n"
               f"Made by `python3 docs/update_reproduce.py build/bin/lagom`, which runs `lagom "
               f"reproduce all --csv docs/reproduce.csv` (`docs/reproduce.md` has the verdict rule "
               f"and every setting the paper leaves out) and pastes its output below. Over all "
               f"targets: {counts['reproduced']} claims reproduced, {counts['direction only']} in "
               f"direction only, {counts['not reproduced']} not reproduced. Every claim is also a "
               f"row of `docs/reproduce.csv`.\n\n{body}\n{END}")
    results = DOCS / "RESULTS.md"
    doc = results.read_text()
    if BEGIN in doc:
        doc = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: section, doc, flags=re.S)
    else:
        doc = doc.replace("\n## 0. ", "\n" + section + "\n\n## 0. ", 1)
    results.write_text(doc)


if __name__ == "__main__":
    main()
