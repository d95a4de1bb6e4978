#!/usr/bin/env python3
"""Checks flashnorm's remarks against flashnorm-gen's own counts.

Usage: check-counts.py GENERATED.mlir REMARKS.txt [--no-fold] [--folded]
Every norm the generator wrote must be raised, (unless --no-fold) every
foldable gain folded, every deferrable norm deferred, except those the generator counts as
deferred without folding (argument or checkpoint weights; --folded when
prepare-function or fold-plan folded them too), every gated MLP's up
path scale moved past its down projection, and every query post-scale the
generator counts merged into its logits' scale. Prints the counts; exits 1
on a mismatch.
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
    moved = len(re.findall(r"\[Passed\] flashnorm-move-scale.*Remark=\"moved",
                           text))
    merged = len(re.findall(r"\[Passed\] flashnorm-move-scale.*merged the "
                            r"query", text))
    norms = int(counts["rms_norms"]) + int(counts["layer_norms"])
    foldable = int(counts["foldable"]) if fold else 0
    deferrable = int(counts.get("deferrable", foldable)) if fold else 0
    want_unfolded = (int(counts["deferred_unfolded"])
                     if fold and "--folded" not in sys.argv else 0)
    ffn = int(counts["ffn_moved"]) if fold else 0
    # A folded gain takes the attention scale into the query weight; a
    # model without gains (OLMo) keeps it out, and its queries merge.
    gainless = counts.get("gains") == "0"
    want_merged = (int(counts.get("query_merged", 0))
                   if fold and ("--folded" not in sys.argv or gainless)
                   else 0)
    print("norms=%d raised=%d foldable=%d folded=%d deferred=%d "
          "deferred_unfolded=%d ffn_moved=%d query_merged=%d"
          % (norms, raised, foldable, folded, deferred, unfolded, moved,
             merged))
    ok = (raised == norms and folded == foldable - want_unfolded
          and deferred == deferrable and unfolded == want_unfolded
          and moved == ffn and merged == want_merged)
    print("COUNTS OK" if ok else "COUNTS MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
