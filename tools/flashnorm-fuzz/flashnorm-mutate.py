#!/usr/bin/env python3
"""flashnorm-mutate: bad inputs through every pass and pipeline.

Takes the project's tests and examples, breaks each copy once (a flipped
byte, a deleted line, or a token replaced by another of its kind: a number,
a type, a shape, an SSA name, an op name, an option value) and runs it
through a flashnorm-opt pass or pipeline chosen at random, with a bad
option now and then. An error message and a non-zero exit are the right
answer; a signal, an LLVM fatal error or a hang is a failure. A crash with no frame of
the project's code on its stack (upstream MLIR, e.g. a verifier while
parsing) is printed as UPSTREAM and counted apart.

  flashnorm-mutate.py --count 300 [--seed 0] [--jobs 2] [--out DIR]
Prints each failure and 'N passed, N failed'; exits 1 on any failure.
"""
import argparse
import concurrent.futures
import glob
import os
import random
import re
import subprocess
import sys
import time

PASSES = [
    "--flashnorm", "--flashnorm=prepare-function=true",
    "--flashnorm=allow-approximate=true", "--flashnorm-raise",
    "--flashnorm-fold-gains", "--flashnorm-fold-gains=prepare-function=true",
    "--flashnorm-defer-scale", "--flashnorm-drop-redundant",
    "--flashnorm-move-scale", "--flashnorm=allow-requantize=true",
    "--flashnorm-fold-gains=allow-requantize=true fold-attention-scale=false",
    "--flashnorm-lower-to-linalg", "--flashnorm-lower-to-llvm",
    "--flashnorm-cpu-pipeline", "--flashnorm-gpu-to-kernels=defer-mode=fused",
    "--flashnorm-gpu-to-kernels=defer-mode=streams",
    "--flashnorm-gpu-pipeline=format=isa",
    "--flashnorm-gpu-pipeline=defer-mode=serial format=isa gemm=cublaslt",
    "--flashnorm-gpu-pipeline=format=isa gemm=codegen",
    "--pass-pipeline=builtin.module(func.func(flashnorm-gpu-weight-layout))",
    "--pass-pipeline=builtin.module(flashnorm-gpu-streams)",
    "--flashnorm-verify-async", "--flashnorm-verify-streams",
    "--flashnorm-pack-prepared-weights=panel=16",
    "--pass-pipeline=builtin.module(flashnorm{prepare-function=true},flashnorm-pack-prepared-weights)",
]
BAD_OPTIONS = [
    "--flashnorm-gpu-pipeline=threads=0", "--flashnorm-gpu-pipeline=chip=",
    "--flashnorm-gpu-pipeline=chip=sm_9000", "--flashnorm-raise=scale-tolerance=nan",
    "--flashnorm-gpu-pipeline=reduce-threads=2048",
    "--flashnorm-cpu-pipeline=tile-sizes=0,0,0",
    "--flashnorm-gpu-pipeline=defer-mode=", "--flashnorm=partial=maybe",
    "--flashnorm-fold-gains=requantize-tolerance=-1",
    "--flashnorm-gpu-pipeline=gemm=sometimes",
    "--flashnorm-pack-prepared-weights=threads=-1",
]
TOKENS = [
    (r"\b\d+\.\d+(?:e[-+]?\d+)?\b", ["0.0", "-1.0", "1.0e+38", "1.0e-45",
                                     "nan", "3.4e39", "-0.0"]),
    (r"\b\d+\b", ["0", "1", "-1", "2147483648", "99999999999"]),
    (r"\b(?:f32|f16|bf16|f64|i32|index)\b", ["f32", "f16", "bf16", "f64",
                                            "i32", "index", "i1"]),
    (r"(?<=<)\d+x", ["0x", "1x", "?x", "3x", ""]),
    (r"%[A-Za-z_][\w.]*", ["%x", "%0", "%arg0", "%undefined"]),
    (r"\b(?:linalg|tosa|arith|flashnorm|tensor|math)\.\w+",
     ["linalg.matmul", "linalg.generic", "arith.addf", "flashnorm.rms_norm",
      "flashnorm.post_scale", "tosa.mul", "tensor.empty", "math.rsqrt"]),
    (r"\[\d[\d, ]*\]", ["[]", "[0]", "[1, 0]", "[2, 2, 2]"]),
]
TIMEOUT = 60


def mutate(text, rng):
    kind = rng.choice(["byte", "line", "token", "token", "token"])
    if kind == "byte" and text:
        i = rng.randrange(len(text))
        return kind, text[:i] + chr(rng.randrange(32, 127)) + text[i + 1:]
    if kind == "line":
        lines = text.split("\n")
        i = rng.randrange(len(lines))
        return kind, "\n".join(lines[:i] + lines[i + 1:])
    pattern, choices = rng.choice(TOKENS)
    hits = list(re.finditer(pattern, text))
    if not hits:
        return "none", text
    m = rng.choice(hits)
    return "token", text[:m.start()] + rng.choice(choices) + text[m.end():]


def run_one(opt, text, args):
    try:
        r = subprocess.run([opt, "-", "-o", os.devnull] + args, input=text,
                           capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return "hang", ""
    err = r.stderr
    if r.returncode < 0 or "Stack dump" in err or "LLVM ERROR" in err or \
            "PLEASE submit" in err:
        frames = re.findall(r"^ *#\d+ 0x[0-9a-f]+ (.*)$", err, re.M)
        where = " | ".join(f[:120] for f in frames[4:7]) or err.strip()[-300:]
        # A crash with none of the project's code on the stack happened in
        # upstream MLIR (e.g. a verifier while parsing): reported, counted
        # apart.
        ours = False
        for f in frames:
            m = re.match(r"(.*) \((.*?)\+0x[0-9a-f]+\)$", f)
            if m and os.path.basename(m.group(2)) == "flashnorm-opt" and \
                    m.group(1) not in ("main", "_start"):
                ours = True
        return ("crash" if ours or not frames else "upstream-crash"), where
    return ("error" if r.returncode else "accepted"), ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    ap.add_argument("--root", default=root, help="the source tree")
    ap.add_argument("--bin", default=os.path.join(root, "build", "bin"))
    ap.add_argument("--out", help="write failing inputs here")
    args = ap.parse_args()
    if args.count < 1 or args.jobs < 1:
        ap.error("--count and --jobs must be >= 1")
    opt = os.path.join(args.bin, "flashnorm-opt")
    if not os.access(opt, os.X_OK):
        ap.error("no flashnorm-opt in %s" % args.bin)
    sources = sorted(
        glob.glob(os.path.join(args.root, "test", "**", "*.mlir"),
                  recursive=True) +
        glob.glob(os.path.join(args.root, "examples", "*.mlir")))
    if not sources:
        ap.error("no .mlir files under %s" % args.root)
    texts = {}
    for path in sources:
        with open(path) as f:
            # Split files are checked one piece at a time, as their tests do.
            for i, piece in enumerate(f.read().split("\n// -----\n")):
                texts["%s#%d" % (os.path.relpath(path, args.root), i)] = piece
    names = sorted(texts)
    rng = random.Random(args.seed)
    cases = []
    for i in range(args.count):
        name = rng.choice(names)
        kind, text = mutate(texts[name], rng)
        flags = [rng.choice(BAD_OPTIONS if rng.random() < 0.1 else PASSES)]
        cases.append((i, name, kind, text, flags))
    start = time.time()
    results = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_one, opt, c[3], c[4]): c for c in cases}
        for f in concurrent.futures.as_completed(futures):
            results[futures[f][0]] = f.result()
    counts, failed = {}, 0
    for i, name, kind, text, flags in cases:
        outcome, detail = results[i]
        counts[outcome] = counts.get(outcome, 0) + 1
        if outcome == "upstream-crash":
            print(("UPSTREAM %s mutant %d of %s %s: %s" % (
                kind, i, name, " ".join(flags), detail))[:400])
        if outcome in ("crash", "hang"):
            failed += 1
            print(("FAIL %s: %s mutant %d of %s %s: %s" % (
                outcome, kind, i, name, " ".join(flags),
                detail.replace("\n", " ")))[:400])
            if args.out:
                os.makedirs(args.out, exist_ok=True)
                with open(os.path.join(args.out, "mutant%d.mlir" % i),
                          "w") as f:
                    f.write("// %s of %s, run with %s\n%s" % (
                        kind, name, " ".join(flags), text))
    print("outcomes: " + " ".join("%s=%d" % kv for kv in sorted(
        counts.items())))
    print("%d inputs in %.0f s" % (len(cases), time.time() - start))
    print("%d passed, %d failed" % (len(cases) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
