#!/usr/bin/env python3
"""Checks flashnorm's remarks against flashnorm-gen's own counts.

Usage: check-counts.py GENERATED.mlir REMARKS.txt [--no-fold]
Every norm the generator wrote must be raised, and (unless --no-fold) every
foldable gain folded and deferred. Prints the counts; exits 1 on a mismatch.
"""
import re
import sys


def main():
    gen, remarks = sys.argv[1], sys.argv[2]
    fold = "--no-fold" not in sys.argv
    with open(gen) as f:
        header = next(l for l in f if l.startswith("// flashnorm-gen:"))
    counts = dict(re.findall(r"(\w+)=(\w+)", header))
    text = open(remarks).read()
    raised = len(re.findall(r"Remark=\"raised a", text))
    folded = len(re.findall(r"\[Passed\] flashnorm-fold-gains", text))
    deferred = len(re.findall(r"\[Passed\] flashnorm-defer-scale", text))
    norms = int(counts["rms_norms"]) + int(counts["layer_norms"])
    foldable = int(counts["foldable"]) if fold else 0
    print("norms=%d raised=%d foldable=%d folded=%d deferred=%d"
          % (norms, raised, foldable, folded, deferred))
    ok = raised == norms and folded == foldable and deferred == foldable
    print("COUNTS OK" if ok else "COUNTS MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
