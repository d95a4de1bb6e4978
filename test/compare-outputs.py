#!/usr/bin/env python3
"""Compares the numbers two programs printed (printMemref output).

Usage: compare-outputs.py EXPECTED ACTUAL [--rtol R] [--atol A]
Every number after 'data =' in EXPECTED must match the one at the same
position in ACTUAL: |a - e| <= atol + rtol * |e|. Exits 1 and names the
worst element otherwise, so `not %compare` proves a check can fail.
"""
import argparse
import math
import re
import sys

NUM = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan)")


def numbers(path):
    values = []
    with open(path) as f:
        text = f.read()
    if "data =" not in text:  # Plain prints (vector.print): every number.
        return [float(x) for x in NUM.findall(text)]
    for chunk in text.split("data =")[1:]:
        # Stop at the next memref header, if any.
        chunk = chunk.split("Unranked Memref")[0]
        values.extend(float(x) for x in NUM.findall(chunk))
    return values


def main():
    p = argparse.ArgumentParser()
    p.add_argument("expected")
    p.add_argument("actual")
    p.add_argument("--rtol", type=float, default=1e-5)
    p.add_argument("--atol", type=float, default=1e-6)
    args = p.parse_args()
    e, a = numbers(args.expected), numbers(args.actual)
    if not e:
        print("error: no numbers in %s" % args.expected)
        return 1
    if len(e) != len(a):
        print("error: %d numbers expected, %d found" % (len(e), len(a)))
        return 1
    worst, worst_i = 0.0, -1
    for i, (x, y) in enumerate(zip(e, a)):
        # An infinity matches only itself: the tolerance around it is
        # infinite, and inf - inf is NaN, which no comparison counts. A NaN
        # matches only a NaN (as flashnorm-run --compare counts them).
        if math.isinf(x) or math.isinf(y) or math.isnan(x) or math.isnan(y):
            same = x == y or (math.isnan(x) and math.isnan(y))
            if not same and worst_i < 0:
                worst_i = i
            continue
        excess = abs(x - y) - (args.atol + args.rtol * abs(x))
        if excess > worst:
            worst, worst_i = excess, i
    if worst_i >= 0:
        print(
            "MISMATCH at element %d: expected %g, got %g (rtol %g, atol %g)"
            % (worst_i, e[worst_i], a[worst_i], args.rtol, args.atol)
        )
        return 1
    print("MATCH: %d numbers within rtol %g, atol %g" % (len(e), args.rtol, args.atol))
    return 0


if __name__ == "__main__":
    sys.exit(main())
