#!/usr/bin/env python3
"""Checks flashnorm's remarks against flashnorm-gen's own counts.

Usage: check-counts.py GENERATED.mlir REMARKS.txt [--no-fold] [--folded]
Every norm the generator wrote must be raised, (unless --no-fold) every
foldable gain folded and deferred, except those the generator counts as
deferred without folding (argument or checkpoint weights; --folded when
prepare-function or fold-plan folded them too), and every gated MLP's up
path scale moved past its down projection. Prints the counts; exits 1 on a
mismatch.
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
    unfolded = len(re.findall(r"\[Passed\] flashnorm-defer-scale.*without "
                              r"folding its gain", text))
    moved = len(re.findall(r"\[Passed\] flashnorm-move-scale", text))
    norms = int(counts["rms_norms"]) + int(counts["layer_norms"])
    foldable = int(counts["foldable"]) if fold else 0
    want_unfolded = (int(counts["deferred_unfolded"])
                     if fold and "--folded" not in sys.argv else 0)
    ffn = int(counts["ffn_moved"]) if fold else 0
    print("norms=%d raised=%d foldable=%d folded=%d deferred=%d "
          "deferred_unfolded=%d ffn_moved=%d"
          % (norms, raised, foldable, folded, deferred, unfolded, moved))
    ok = (raised == norms and folded == foldable - want_unfolded
          and deferred == foldable and unfolded == want_unfolded
          and moved == ffn)
    print("COUNTS OK" if ok else "COUNTS MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
