#!/usr/bin/env python3
"""flashnorm-fuzz: randomized differential testing of the flashnorm passes.

Generates small programs with one or two RMSNorms / LayerNorms feeding
projections, in the frontend forms flashnorm-raise reads (linalg generics,
linalg.reduce with arith on tensors, TOSA, linalg named element-wise ops,
torch-mlir's batch-1 generics with gather and yield-only broadcasts),
over f32 / f16 / bf16, odd and 0-sized
shapes, and gains that are constant, zero, negative, tiny, huge, uniform,
`1 + g` or arguments, with shared and tied weights, residual users, chained
norms and adversarial rows. Each program runs original against rewritten
through the lowerings chosen for it:
  ref       --flashnorm-lower-to-llvm (the reference CPU lowering)
  cpu       --flashnorm-cpu-pipeline (statistics as async tasks)
  gpu-cpu   the GPU kernels run as CPU loops (flashnorm-test-gpu-launch-to-loops)
  gpu       --flashnorm-gpu-pipeline down to PTX (compiles; no GPU needed)
and every outcome is classified:
  crash (a signal, an LLVM fatal error), verifier (invalid IR or an error on
  valid input), hang (over the time limit), miscompile (numbers differ where
  the original's are finite), refusal (a norm left unraised), ok.
Failures are minimized (the generator's parameters shrunk while the failure
stays the same) and written to --out.

  flashnorm-fuzz.py --seeds 0:100 [--jobs 2] [--out DIR] [--bin DIR]
Prints one line per failure, the outcomes and the raise rate per form, and
'N passed, N failed' last; exits 1 if anything failed.
"""
import argparse
import concurrent.futures
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time

FORMS = ["generic", "arith", "tosa", "named", "torch"]
# The forms the README says the raise reads (a form generated only to
# measure it would be left out of this set and marked "not claimed").
RECOGNIZED = {"generic", "arith", "tosa", "named", "torch"}
DTYPES = ["f32", "f16", "bf16"]
GAINS = ["none", "random", "zero", "negative", "tiny", "huge", "uniform",
         "one_plus", "argument"]
INPUTS = ["plain", "large_mean", "huge", "tiny"]
TIMEOUT = 60
# |rewritten - original| / max |original| per output, by the narrowest type.
TOLERANCE = {"f32": 1e-3, "f16": 3e-2, "bf16": 8e-2}


def random_params(rng):
    p = {
        "form": rng.choice(FORMS),
        "norm": rng.choice(["rms", "rms", "layer"]),
        "dtype": rng.choice(DTYPES),
        "rows": rng.choice([1, 3, 4, 7]),
        "k": rng.choice([1, 8, 16, 24, 64, 0]),
        "n": rng.choice([1, 8, 12, 32, 0]),
        "eps": rng.choice([1e-5, 1e-6, 0.0]),
        "gain": rng.choice(GAINS),
        "mean_div": rng.random() < 0.5,      # divide by K, not multiply by 1/K
        "rsqrt": rng.choice(["rsqrt", "div_sqrt", "recip_sqrt"]),
        "transposed": rng.random() < 0.3,    # N x K weight through a transpose
        "projections": rng.choice([1, 1, 2]),
        "tied": rng.random() < 0.15,         # a weight also returned
        "residual": rng.random() < 0.2,      # the norm also returned
        "chain": rng.random() < 0.2,         # a second norm on the first
        "input": rng.choice(INPUTS),
        "seed": rng.randrange(1 << 30),
        "options": rng.choice(["", "", "partial=false", "allow-approximate=true",
                               "clone-shared-weights=false"]),
        "lowerings": ["ref"] + [l for l in ("cpu", "gpu-cpu", "gpu")
                                if rng.random() < 0.35],
        # The projections read the last token's row (HF's hidden[:, -1:, :]
        # before the LM head). Drawn last: earlier seeds keep their programs.
        "last": rng.random() < 0.25,
    }
    if p["form"] == "tosa":
        p["k"], p["n"] = max(p["k"], 1), max(p["n"], 1)  # TOSA has no 0 dims
        p["gain"] = "random" if p["gain"] == "argument" else p["gain"]
        p["mean_div"] = False
        p["rsqrt"] = "rsqrt"
        p["chain"] = False
    if p["gain"] == "argument":
        p["options"] = "prepare-function=true"
    if p["form"] == "tosa" and p["dtype"] != "f32" and \
            p["input"] in ("large_mean", "huge"):
        # TOSA programs compute their statistics in the activation type; the
        # raised norm computes them in f32 (docs/NUMERICS.md), which is more
        # accurate exactly where f16/bf16 statistics are not.
        p["input"] = "plain"
    return p


class Emitter:
    def __init__(self):
        self.lines, self.count = [], 0

    def __call__(self, text):
        self.lines.append("  " + text)

    def name(self, hint):
        self.count += 1
        return "%%%s%d" % (hint, self.count)


def tensor(shape, t):
    return "tensor<%sx%s>" % ("x".join(str(s) for s in shape), t) if shape \
        else "tensor<%s>" % t


def fmt(v):
    r = repr(float(v))
    if "e" in r and "." not in r.split("e")[0]:
        r = r.replace("e", ".0e")
    return r


def dense(values, shape, t):
    if len(set(values)) == 1 and values:
        return "dense<%s> : %s" % (fmt(values[0]), tensor(shape, t))

    def nest(vals, dims):
        if len(dims) <= 1:
            return "[%s]" % ", ".join(fmt(v) for v in vals)
        step = len(vals) // dims[0]
        return "[%s]" % ", ".join(nest(vals[i * step:(i + 1) * step], dims[1:])
                                  for i in range(dims[0]))
    return "dense<%s> : %s" % (nest(values, shape), tensor(shape, t))


ID2 = "affine_map<(d0, d1) -> (d0, d1)>"
ROW2 = "affine_map<(d0, d1) -> (d0)>"
FEAT2 = "affine_map<(d0, d1) -> (d1)>"


def generic(e, ins, in_maps, out_shape, out_t, body, iters=None, init=None):
    """A linalg.generic over [rows, k]; `body(args)` returns the yielded
    value's SSA text after emitting its ops into e (through `e`)."""
    res = e.name("g")
    if init is None:
        empty = e.name("e")
        e("%s = tensor.empty() : %s" % (empty, tensor(out_shape, out_t)))
        init = empty
    iters = iters or ["parallel", "parallel"]
    out_map = ID2 if len(out_shape) == 2 else (
        ROW2 if len(iters) == 2 else "affine_map<(d0) -> (d0)>")
    emit_generic(e, res, ins, in_maps + [out_map], iters, init, out_shape,
                 out_t, body)
    return res


def emit_generic(e, res, ins, maps, iters, init, out_shape, out_t, body):
    """The text of `res = linalg.generic` with its region: `body(b, args)`
    emits the scalar ops into b and returns the value to yield."""
    ins_text = " ins(%s : %s)" % (", ".join(v for v, _ in ins),
                                  ", ".join(t for _, t in ins)) if ins else ""
    e("%s = linalg.generic {indexing_maps = [%s], iterator_types = [%s]}%s "
      "outs(%s : %s) {" % (res, ", ".join(maps),
                           ", ".join('"%s"' % i for i in iters), ins_text,
                           init, tensor(out_shape, out_t)))
    args = ["%%a%d" % i for i in range(len(ins) + 1)]
    arg_types = [t.split("x")[-1].rstrip(">") if t.startswith("tensor<")
                 else t for _, t in ins] + [out_t]
    e("^bb0(%s):" % ", ".join("%s: %s" % (a, at)
                               for a, at in zip(args, arg_types)))
    inner = Emitter()
    inner.count = e.count
    y = body(inner, args)
    e.count = inner.count
    for line in inner.lines:
        e("  " + line.strip())
    e("  linalg.yield %s : %s" % (y, out_t))
    e("} -> %s" % tensor(out_shape, out_t))


def gen_norm(e, p, x, rng, weights, args):
    """Emits one norm of x ([rows, k] of dtype, or [1, rows, k] for tosa) in
    the program's form; returns the normalized value (dtype)."""
    r, k, t, form = p["rows"], p["k"], p["dtype"], p["form"]
    layer = p["norm"] == "layer"
    eps = p["eps"]
    if form == "tosa":
        return gen_norm_tosa(e, p, x, rng, weights)
    xs = tensor([r, k], t)
    if form == "torch":
        n = gen_norm_torch(e, p, x, rng)
        return gain_and_bias(e, p, n, rng, args)
    f32 = tensor([r, k], "f32")
    # Statistics in f32 (Llama's cast order): extf first for narrow types.
    xf = x
    if t != "f32":
        if form == "generic":
            xf = generic(e, [(x, xs)], [ID2], [r, k], "f32",
                         lambda b, a: ext(b, a[0], t))
        else:
            xf = e.name("xf")
            e("%s = arith.extf %s : %s to %s" % (xf, x, xs, f32))
    inv_k = 1.0 / k if k else 0.0

    def row_sum(v):
        zero = e.name("z")
        e("%s = arith.constant 0.0 : f32" % zero)
        empty = e.name("e")
        e("%s = tensor.empty() : %s" % (empty, tensor([r], "f32")))
        acc = e.name("acc")
        e("%s = linalg.fill ins(%s : f32) outs(%s : %s) -> %s" % (
            acc, zero, empty, tensor([r], "f32"), tensor([r], "f32")))
        if form == "generic":
            return generic(e, [(v, f32)], [ID2], [r], "f32",
                           lambda b, a: add(b, a[0], a[1]),
                           iters=["parallel", "reduction"], init=acc)
        s = e.name("sum")
        e("%s = linalg.reduce ins(%s : %s) outs(%s : %s) dimensions = [1]" %
          (s, v, f32, acc, tensor([r], "f32")))
        e("  (%in: f32, %out: f32) {")
        e("    %s0 = arith.addf %in, %out : f32")
        e("    linalg.yield %s0 : f32")
        e("  }")
        return s

    def mean_of(s):
        if form == "generic":
            def body(b, a):
                c = b.name("c")
                if p["mean_div"]:
                    b("%s = arith.constant %s : f32" % (c, fmt(float(k))))
                    m = b.name("m")
                    b("%s = arith.divf %s, %s : f32" % (m, a[0], c))
                else:
                    b("%s = arith.constant %s : f32" % (c, fmt(inv_k)))
                    m = b.name("m")
                    b("%s = arith.mulf %s, %s : f32" % (m, a[0], c))
                return m
            return generic(e, [(s, tensor([r], "f32"))],
                           ["affine_map<(d0) -> (d0)>"], [r], "f32", body,
                           iters=["parallel"])
        c = e.name("c")
        m = e.name("mean")
        if p["mean_div"]:
            e("%s = arith.constant dense<%s> : %s" % (c, fmt(float(k)),
                                                      tensor([r], "f32")))
            e("%s = arith.divf %s, %s : %s" % (m, s, c, tensor([r], "f32")))
        else:
            e("%s = arith.constant dense<%s> : %s" % (c, fmt(inv_k),
                                                      tensor([r], "f32")))
            e("%s = arith.mulf %s, %s : %s" % (m, s, c, tensor([r], "f32")))
        return m

    def broadcast_rows(v):
        empty = e.name("e")
        e("%s = tensor.empty() : %s" % (empty, f32))
        b = e.name("b")
        e("%s = linalg.broadcast ins(%s : %s) outs(%s : %s) dimensions = [1]"
          % (b, v, tensor([r], "f32"), empty, f32))
        return b

    centered = xf
    if layer:
        mean = mean_of(row_sum(xf))
        if form == "generic":
            centered = generic(e, [(xf, f32), (mean, tensor([r], "f32"))],
                               [ID2, ROW2], [r, k], "f32",
                               lambda b, a: sub(b, a[0], a[1]))
        else:
            centered = e.name("d")
            e("%s = arith.subf %s, %s : %s" % (centered, xf,
                                               broadcast_rows(mean), f32))
    if form == "generic":
        sq = generic(e, [(centered, f32)], [ID2], [r, k], "f32",
                     lambda b, a: mul(b, a[0], a[0]))
    elif form == "named":
        empty = e.name("e")
        e("%s = tensor.empty() : %s" % (empty, f32))
        sq = e.name("sq")
        e("%s = linalg.mul ins(%s, %s : %s, %s) outs(%s : %s) -> %s" % (
            sq, centered, centered, f32, f32, empty, f32, f32))
    else:
        sq = e.name("sq")
        e("%s = arith.mulf %s, %s : %s" % (sq, centered, centered, f32))
    ms = mean_of(row_sum(sq))

    def scale_body(b, a):
        c = b.name("eps")
        b("%s = arith.constant %s : f32" % (c, fmt(eps)))
        v = b.name("v")
        b("%s = arith.addf %s, %s : f32" % (v, a[0], c))
        return inv_sqrt(b, v, p["rsqrt"])
    if form == "generic":
        inv = generic(e, [(ms, tensor([r], "f32"))],
                      ["affine_map<(d0) -> (d0)>"], [r], "f32", scale_body,
                      iters=["parallel"])
        n = generic(e, [(centered, f32), (inv, tensor([r], "f32"))],
                    [ID2, ROW2], [r, k], "f32",
                    lambda b, a: mul(b, a[0], a[1]))
    else:
        c = e.name("c")
        e("%s = arith.constant dense<%s> : %s" % (c, fmt(eps),
                                                  tensor([r], "f32")))
        v = e.name("v")
        e("%s = arith.addf %s, %s : %s" % (v, ms, c, tensor([r], "f32")))
        inv = tensor_inv_sqrt(e, v, p["rsqrt"], tensor([r], "f32"))
        n = e.name("n")
        if form == "named":
            empty = e.name("e")
            e("%s = tensor.empty() : %s" % (empty, f32))
            e("%s = linalg.mul ins(%s, %s : %s, %s) outs(%s : %s) -> %s" % (
                n, centered, broadcast_rows(inv), f32, f32, empty, f32, f32))
        else:
            e("%s = arith.mulf %s, %s : %s" % (n, centered,
                                               broadcast_rows(inv), f32))
    # Back to the activation type, then the gain (Llama's order).
    if t != "f32":
        if form == "generic":
            n = generic(e, [(n, f32)], [ID2], [r, k], t,
                        lambda b, a: trunc(b, a[0], t))
        else:
            nt = e.name("nt")
            e("%s = arith.truncf %s : %s to %s" % (nt, n, f32, xs))
            n = nt
    return gain_and_bias(e, p, n, rng, args)


def gain_and_bias(e, p, n, rng, args):
    """The gain (Llama's order: after the rounding) and a LayerNorm's bias
    on the normalized [rows, k] value."""
    r, k, t = p["rows"], p["k"], p["dtype"]
    xs = tensor([r, k], t)
    layer = p["norm"] == "layer"
    g = gain_value(e, p, rng, k, t, args)
    if g is not None:
        gv, one_plus = g
        n = generic(e, [(n, xs), (gv, tensor([k], t))], [ID2, FEAT2], [r, k],
                    t, lambda b, a: gain_body(b, a, t, one_plus))
    if layer and rng.random() < 0.5:
        bias = e.name("bias")
        e("%s = arith.constant %s" % (bias, dense(
            [round(rng.uniform(-1, 1), 3) for _ in range(k)] or [0.0], [k], t)
            if k else "dense<0.0> : %s" % tensor([0], t)))
        n = generic(e, [(n, xs), (bias, tensor([k], t))], [ID2, FEAT2],
                    [r, k], t, lambda b, a: add(b, a[0], a[1], t))
    return n


ID3 = "affine_map<(d0, d1, d2) -> (d0, d1, d2)>"
FULL3 = "affine_map<(d0, d1, d2) -> (0, d1, d2)>"
ROW3 = "affine_map<(d0, d1, d2) -> (0, d1, 0)>"


def generic3(e, ins, in_maps, shape, out_t, body, reduce=False, init=None):
    """A linalg.generic over [1, rows, k] (or [1, rows, 1]) as torch-mlir
    writes it: batch-1 maps with literal 0 results."""
    res = e.name("g")
    if init is None:
        init = e.name("e")
        e("%s = tensor.empty() : %s" % (init, tensor(shape, out_t)))
    out_map = "affine_map<(d0, d1, d2) -> (d0, d1, 0)>" if reduce else ID3
    iters = ["parallel", "parallel", "reduction" if reduce else "parallel"]
    emit_generic(e, res, ins, in_maps + [out_map], iters, init, shape, out_t,
                 body)
    return res


def gen_norm_torch(e, p, x, rng):
    """The norm on [1, rows, k] as torch-mlir's lowering writes it: sums into
    [1, rows, 1] with keepdim maps, row statistics broadcast to full shape by
    a gather (`tensor.extract` at `linalg.index 1`) or a yield-only generic,
    an f64 epsilon truncated in the body; back to [rows, k]."""
    r, k, t = p["rows"], p["k"], p["dtype"]
    layer = p["norm"] == "layer"
    full, row = [1, r, k], [1, r, 1]
    x3 = e.name("x3")
    e("%s = tensor.expand_shape %s [[0, 1], [2]] output_shape [1, %d, %d] : "
      "%s into %s" % (x3, x, r, k, tensor([r, k], t), tensor(full, t)))
    xf = x3
    if t != "f32":
        xf = generic3(e, [(x3, tensor(full, t))], [FULL3], full, "f32",
                      lambda b, a: ext(b, a[0], t))
    f32, rowt = tensor(full, "f32"), tensor(row, "f32")

    def row_sum(v):
        zero = e.name("z")
        e("%s = arith.constant 0.0 : f32" % zero)
        empty = e.name("e")
        e("%s = tensor.empty() : %s" % (empty, rowt))
        acc = e.name("acc")
        e("%s = linalg.fill ins(%s : f32) outs(%s : %s) -> %s" % (
            acc, zero, empty, rowt, rowt))
        return generic3(e, [(v, f32)], [ID3], row, "f32",
                        lambda b, a: add(b, a[0], a[1]), reduce=True, init=acc)

    def mean_of(s):
        def body(b, a):
            c = b.name("c")
            b("%s = arith.constant %s : f32" % (
                c, fmt(float(k)) if p["mean_div"] else
                fmt(1.0 / k if k else 0.0)))
            return (binary("divf", "m") if p["mean_div"] else mul)(b, a[0], c)
        return generic3(e, [(s, rowt)], [ROW3], row, "f32", body)

    def expand(v):
        if rng.random() < 0.5:
            return generic3(e, [(v, rowt)], [ROW3], full, "f32",
                            lambda b, a: a[0])
        c0 = e.name("c0")
        e("%s = arith.constant 0 : index" % c0)

        def gather(b, a):
            i = b.name("i")
            b("%s = linalg.index 1 : index" % i)
            g = b.name("x")
            b("%s = tensor.extract %s[%s, %s, %s] : %s" % (g, v, c0, i, c0,
                                                           rowt))
            return g
        return generic3(e, [], [], full, "f32", gather)

    src = xf
    if layer:
        mean = expand(mean_of(row_sum(xf)))
        src = generic3(e, [(xf, f32), (mean, f32)], [FULL3, FULL3], full,
                       "f32", lambda b, a: sub(b, a[0], a[1]))
    sq = generic3(e, [(src, f32), (src, f32)], [FULL3, FULL3], full, "f32",
                  lambda b, a: mul(b, a[0], a[1]))
    ms = mean_of(row_sum(sq))
    eps64 = e.name("eps")
    e("%s = arith.constant %s : f64" % (eps64, fmt(p["eps"])))

    def scale_body(b, a):
        c = b.name("eps")
        b("%s = arith.truncf %s : f64 to f32" % (c, eps64))
        return inv_sqrt(b, add(b, a[0], c), p["rsqrt"])
    inv = expand(generic3(e, [(ms, rowt)], [ROW3], row, "f32", scale_body))
    n = generic3(e, [(src, f32), (inv, f32)], [FULL3, FULL3], full, "f32",
                 lambda b, a: mul(b, a[0], a[1]))
    if t != "f32":
        n = generic3(e, [(n, f32)], [FULL3], full, t,
                     lambda b, a: trunc(b, a[0], t))
    n2 = e.name("n")
    e("%s = tensor.collapse_shape %s [[0, 1], [2]] : %s into %s" % (
        n2, n, tensor(full, t), tensor([r, k], t)))
    return n2


def gain_value(e, p, rng, k, t, args):
    kind = p["gain"]
    if kind == "none":
        return None
    if kind == "argument":
        name = "%%gain%d" % len(args)
        args.append((name, tensor([k], t)))
        return name, False
    values = {
        "random": lambda: round(rng.uniform(0.5, 1.5), 3),
        "zero": lambda: 0.0 if rng.random() < 0.5 else 1.0,
        "negative": lambda: round(rng.uniform(-1.5, -0.5), 3),
        "tiny": lambda: 1e-30 if t == "f32" else 1e-4,
        "huge": lambda: 1e4 if t != "f16" else 300.0,
        "one_plus": lambda: round(rng.uniform(-0.5, 0.5), 3),
    }.get(kind)
    if kind == "uniform":
        vals = [1.75] * k
    else:
        vals = [values() for _ in range(k)]
    name = e.name("gain")
    e("%s = arith.constant %s" % (name, dense(vals, [k], t) if k else
                                   "dense<1.0> : %s" % tensor([0], t)))
    return name, kind == "one_plus"


def gain_body(b, a, t, one_plus):
    g = a[1]
    if one_plus:  # widened before 1 + g (Gemma)
        gw = ext(b, g, t) if t != "f32" else g
        one = b.name("one")
        b("%s = arith.constant 1.0 : f32" % one)
        s = b.name("s")
        b("%s = arith.addf %s, %s : f32" % (s, gw, one))
        xw = ext(b, a[0], t) if t != "f32" else a[0]
        m = b.name("m")
        b("%s = arith.mulf %s, %s : f32" % (m, xw, s))
        return trunc(b, m, t) if t != "f32" else m
    return mul(b, a[0], g, t)


def ext(b, v, t):
    r = b.name("x")
    b("%s = arith.extf %s : %s to f32" % (r, v, t))
    return r


def trunc(b, v, t):
    r = b.name("t")
    b("%s = arith.truncf %s : f32 to %s" % (r, v, t))
    return r


def binary(op, hint):
    """An emitter of one scalar arith op: `fn(b, x, y[, type])`."""
    def emit(b, x, y, t="f32"):
        r = b.name(hint)
        b("%s = arith.%s %s, %s : %s" % (r, op, x, y, t))
        return r
    return emit


add, sub, mul = binary("addf", "s"), binary("subf", "d"), binary("mulf", "m")


def inv_sqrt(b, v, how):
    r = b.name("r")
    if how == "rsqrt":
        b("%s = math.rsqrt %s : f32" % (r, v))
        return r
    s = b.name("sq")
    b("%s = math.sqrt %s : f32" % (s, v))
    one = b.name("one")
    b("%s = arith.constant 1.0 : f32" % one)
    b("%s = arith.divf %s, %s : f32" % (r, one, s))
    return r


def tensor_inv_sqrt(e, v, how, ty):
    r = e.name("r")
    if how == "rsqrt":
        e("%s = math.rsqrt %s : %s" % (r, v, ty))
        return r
    s = e.name("sq")
    e("%s = math.sqrt %s : %s" % (s, v, ty))
    one = e.name("one")
    e("%s = arith.constant dense<1.0> : %s" % (one, ty))
    e("%s = arith.divf %s, %s : %s" % (r, one, s, ty))
    return r


def gen_norm_tosa(e, p, x, rng, weights):
    r, k, t = p["rows"], p["k"], p["dtype"]
    layer = p["norm"] == "layer"
    x3 = tensor([1, r, k], t)
    shift = e.name("shift")
    e('%s = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> '
      'tensor<1xi8>' % shift)

    def const(v, shape, ty=t):
        c = e.name("c")
        e('%s = "tosa.const"() {values = dense<%s> : %s} : () -> %s' % (
            c, fmt(v), tensor(shape, ty), tensor(shape, ty)))
        return c

    def tmul(a, b, at, bt, rt):
        m = e.name("m")
        e("%s = tosa.mul %s, %s, %s : (%s, %s, tensor<1xi8>) -> %s" % (
            m, a, b, shift, at, bt, rt))
        return m
    row = tensor([1, r, 1], t)
    src = x
    if layer:
        s = e.name("sum")
        e("%s = tosa.reduce_sum %s {axis = 2 : i32} : (%s) -> %s" % (
            s, x, x3, row))
        mean = tmul(s, const(1.0 / k if k else 0.0, [1, 1, 1]), row,
                    tensor([1, 1, 1], t), row)
        d = e.name("d")
        e("%s = tosa.sub %s, %s : (%s, %s) -> %s" % (d, x, mean, x3, row, x3))
        src = d
    sq = tmul(src, src, x3, x3, x3)
    s = e.name("sum")
    e("%s = tosa.reduce_sum %s {axis = 2 : i32} : (%s) -> %s" % (
        s, sq, x3, row))
    ms = tmul(s, const(1.0 / k if k else 0.0, [1, 1, 1]), row,
              tensor([1, 1, 1], t), row)
    v = e.name("v")
    e("%s = tosa.add %s, %s : (%s, %s) -> %s" % (
        v, ms, const(p["eps"], [1, 1, 1]), row, tensor([1, 1, 1], t), row))
    inv = e.name("r")
    e("%s = tosa.rsqrt %s : (%s) -> %s" % (inv, v, row, row))
    n = tmul(src, inv, x3, row, x3)
    if p["gain"] != "none":
        vals = {"zero": 0.0, "negative": -0.75, "tiny": 1e-4, "huge": 300.0,
                "uniform": 1.75, "one_plus": 1.25}.get(p["gain"])
        vs = [vals if vals is not None else round(rng.uniform(0.5, 1.5), 3)
              for _ in range(k)]
        g = e.name("gain")
        e('%s = "tosa.const"() {values = %s} : () -> %s' % (
            g, dense(vs, [1, 1, k], t) if k else "dense<1.0> : %s" %
            tensor([1, 1, 0], t), tensor([1, 1, k], t)))
        n = tmul(n, g, x3, tensor([1, 1, k], t), x3)
    return n


def gen_program(p):
    rng = random.Random(p["seed"])
    e = Emitter()
    r, k, n, t, form = p["rows"], p["k"], p["n"], p["dtype"], p["form"]
    tosa = form == "tosa"
    xshape = [1, r, k] if tosa else [r, k]
    args = [("%x", tensor(xshape, t))]
    results = []
    weights = []
    y = gen_norm(e, p, "%x", rng, weights, args)
    if p["chain"]:
        y = gen_norm(e, dict(p, norm="rms", gain="none"), y, rng, weights,
                     args)
    if p["residual"]:
        results.append((y, tensor(xshape, t)))
    if p["last"] and k > 0:
        # One slice of the last row, read by every projection (a row of no
        # features has no element to slice at offset 0).
        last = e.name("last")
        if tosa:
            start, size = e.name("start"), e.name("size")
            e("%s = tosa.const_shape {values = dense<[0, %d, 0]> : "
              "tensor<3xindex>} : () -> !tosa.shape<3>" % (start, r - 1))
            e("%s = tosa.const_shape {values = dense<[1, 1, %d]> : "
              "tensor<3xindex>} : () -> !tosa.shape<3>" % (size, k))
            e("%s = tosa.slice %s, %s, %s : (%s, !tosa.shape<3>, "
              "!tosa.shape<3>) -> %s" % (last, y, start, size,
                                         tensor([1, r, k], t),
                                         tensor([1, 1, k], t)))
        else:
            e("%s = tensor.extract_slice %s[%d, 0] [1, %d] [1, 1] : %s to %s"
              % (last, y, r - 1, k, tensor([r, k], t), tensor([1, k], t)))
        y, r = last, 1
    for j in range(p["projections"]):
        wv = [round(rng.uniform(-0.5, 0.5), 3) for _ in range(k * n)]
        wshape = [n, k] if p["transposed"] else [k, n]
        w = e.name("w")
        if p["gain"] == "argument":
            w = "%%warg%d" % j
            args.append((w, tensor(wshape, t)))
        elif tosa:
            e('%s = "tosa.const"() {values = %s} : () -> %s' % (
                w, dense(wv or [0.0], wshape, t) if wv else
                "dense<0.0> : %s" % tensor(wshape, t), tensor(wshape, t)))
        else:
            e("%s = arith.constant %s" % (w, dense(wv, wshape, t) if wv else
                                          "dense<0.0> : %s" %
                                          tensor(wshape, t)))
        if p["tied"] and j == 0:
            results.append((w, tensor(wshape, t)))
        if tosa:
            wt = w
            if p["transposed"]:
                wt = e.name("tr")
                e("%s = tosa.transpose %s {perms = array<i32: 1, 0>} : (%s) "
                  "-> %s" % (wt, w, tensor(wshape, t), tensor([k, n], t)))
            shp = e.name("shape")
            e("%s = tosa.const_shape {values = dense<[1, %d, %d]> : "
              "tensor<3xindex>} : () -> !tosa.shape<3>" % (shp, k, n))
            w3 = e.name("rs")
            e("%s = tosa.reshape %s, %s : (%s, !tosa.shape<3>) -> %s" % (
                w3, wt, shp, tensor([k, n], t), tensor([1, k, n], t)))
            zp = e.name("zp")
            e('%s = "tosa.const"() {values = dense<0.0> : tensor<1x%s>} : () '
              '-> tensor<1x%s>' % (zp, t, t))
            mm = e.name("mm")
            e("%s = tosa.matmul %s, %s, %s, %s : (%s, %s, tensor<1x%s>, "
              "tensor<1x%s>) -> %s" % (mm, y, w3, zp, zp, tensor([1, r, k], t),
                                       tensor([1, k, n], t), t, t,
                                       tensor([1, r, n], t)))
            results.append((mm, tensor([1, r, n], t)))
            continue
        wk = w
        if p["transposed"]:
            empty = e.name("e")
            e("%s = tensor.empty() : %s" % (empty, tensor([k, n], t)))
            wk = e.name("tr")
            e("%s = linalg.transpose ins(%s : %s) outs(%s : %s) "
              "permutation = [1, 0]" % (wk, w, tensor(wshape, t), empty,
                                        tensor([k, n], t)))
        zero = e.name("z")
        e("%s = arith.constant 0.0 : %s" % (zero, t))
        empty = e.name("e")
        e("%s = tensor.empty() : %s" % (empty, tensor([r, n], t)))
        fill = e.name("f")
        e("%s = linalg.fill ins(%s : %s) outs(%s : %s) -> %s" % (
            fill, zero, t, empty, tensor([r, n], t), tensor([r, n], t)))
        mm = e.name("mm")
        e("%s = linalg.matmul ins(%s, %s : %s, %s) outs(%s : %s) -> %s" % (
            mm, y, wk, tensor([r, k], t), tensor([k, n], t), fill,
            tensor([r, n], t), tensor([r, n], t)))
        results.append((mm, tensor([r, n], t)))
    fn = ["func.func @forward(%s) -> (%s) {" % (
        ", ".join("%s: %s" % a for a in args),
        ", ".join(ty for _, ty in results))]
    fn += e.lines
    fn.append("  return %s : %s" % (", ".join(v for v, _ in results),
                                    ", ".join(ty for _, ty in results)))
    fn.append("}")
    return "\n".join(fn + gen_main(p, args, results)) + "\n"


def gen_main(p, args, results):
    """@main: inputs from sin(), shaped by p["input"]; argument gains and
    weights as constants; every result printed as f32."""
    rng = random.Random(p["seed"] + 1)
    e = Emitter()
    call_args = []
    for name, ty in args:
        shape = [int(s) for s in re.findall(r"(\d+)x", ty)]
        t = ty.split("x")[-1].rstrip(">")
        count = 1
        for s in shape:
            count *= s
        if name == "%x":
            call_args.append(input_tensor(e, p, shape, t))
            continue
        vals = [round(rng.uniform(0.5, 1.5), 3) for _ in range(count)]
        c = e.name("arg")
        e("%s = arith.constant %s" % (c, dense(vals, shape, t) if vals else
                                       "dense<0.0> : %s" % ty))
        call_args.append(c)
    outs = ", ".join(ty for _, ty in results)
    rs = [e.name("res") for _ in results]
    e("%s = call @forward(%s) : (%s) -> (%s)" % (
        ", ".join(rs), ", ".join(call_args), ", ".join(ty for _, ty in args),
        outs))
    for v, (_, ty) in zip(rs, results):
        t = ty.split("x")[-1].rstrip(">")
        f = v
        if t != "f32":
            f = e.name("w")
            e("%s = arith.extf %s : %s to %s" % (f, v, ty,
                                                 ty.replace(t + ">", "f32>")))
        u = e.name("u")
        e("%s = tensor.cast %s : %s to tensor<*xf32>" % (
            u, f, ty.replace(t + ">", "f32>")))
        e("call @printMemrefF32(%s) : (tensor<*xf32>) -> ()" % u)
    return ["func.func @main() {"] + e.lines + [
        "  return", "}", "func.func private @printMemrefF32(tensor<*xf32>)"]


def input_tensor(e, p, shape, t):
    ty = tensor(shape, "f32")
    empty = e.name("e")
    e("%s = tensor.empty() : %s" % (empty, ty))
    rank = len(shape)
    dims = ", ".join("d%d" % i for i in range(rank))
    x = e.name("x")
    scale, offset = {"plain": (1.0, 0.0), "large_mean": (2.0, 100.0),
                     "huge": (1e4, 0.0), "tiny": (1e-3, 0.0)}[p["input"]]
    if t == "f16" and p["input"] == "huge":
        # Statistics written in f16 (TOSA) overflow past sum(x^2) = 65504,
        # where the raised norm, in f32, would be right and differ.
        scale = 10.0
    e("%s = linalg.generic {indexing_maps = [affine_map<(%s) -> (%s)>], "
      "iterator_types = [%s]} outs(%s : %s) {" % (
          x, dims, dims, ", ".join(['"parallel"'] * rank), empty, ty))
    e("^bb0(%o: f32):")
    e("  %i0 = linalg.index " + str(rank - 2) + " : index")
    e("  %i1 = linalg.index " + str(rank - 1) + " : index")
    e("  %j0 = arith.index_cast %i0 : index to i32")
    e("  %j1 = arith.index_cast %i1 : index to i32")
    e("  %f0 = arith.sitofp %j0 : i32 to f32")
    e("  %f1 = arith.sitofp %j1 : i32 to f32")
    e("  %c = arith.constant 0.37 : f32")
    e("  %m = arith.mulf %f1, %c : f32")
    e("  %s = arith.addf %m, %f0 : f32")
    e("  %v = math.sin %s : f32")
    e("  %sc = arith.constant " + fmt(scale) + " : f32")
    e("  %off = arith.constant " + fmt(offset) + " : f32")
    e("  %w = arith.mulf %v, %sc : f32")
    e("  %y = arith.addf %w, %off : f32")
    e("  linalg.yield %y : f32")
    e("} -> %s" % ty)
    if t == "f32":
        return x
    xt = e.name("xt")
    e("%s = arith.truncf %s : %s to %s" % (xt, x, ty, tensor(shape, t)))
    return xt


# ---------------------------------------------------------------------------
# Running and classifying


class Tools:
    def __init__(self, bin_dir, lib_dir):
        self.opt = os.path.join(bin_dir, "flashnorm-opt")
        self.runner = os.path.join("/usr/lib/llvm-22/bin", "mlir-runner")
        libs = ["libmlir_runner_utils.so", "libmlir_c_runner_utils.so",
                "libmlir_async_runtime.so", "libomp.so"]
        self.libs = ",".join(os.path.join(lib_dir, l) for l in libs)


def run(cmd, stdin=None, timeout=TIMEOUT):
    try:
        r = subprocess.run(cmd, input=stdin, capture_output=True, text=True,
                           timeout=timeout)
        return r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired:
        return "timeout", "", ""


def crashed(code, err):
    return (code != "timeout" and code < 0) or "Stack dump" in err or \
        "LLVM ERROR" in err or "PLEASE submit" in err


def numbers(text):
    """The numbers of each printed memref (upstream prints one stray number
    for an empty one: none are taken)."""
    out = []
    for header, chunk in re.findall(r"sizes = \[([0-9, ]*)\].*?data =(.*?)"
                                    r"(?=Unranked Memref|\Z)", text, re.S):
        if "0" in [d.strip() for d in header.split(",")]:
            out.append([])
            continue
        out.append([float(v) for v in re.findall(
            r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan)", chunk)])
    return out


def lower_cmds(tools, which):
    o = tools.opt
    if which == "ref":
        return [[o, "--flashnorm-lower-to-llvm"]]
    if which == "cpu":
        return [[o, "--flashnorm-cpu-pipeline"]]
    if which == "gpu-cpu":
        return [[o, "--flashnorm-gpu-to-kernels=defer-mode=streams"],
                [o, "--pass-pipeline=builtin.module(func.func("
                    "flashnorm-test-gpu-launch-to-loops))"],
                [o, "--flashnorm-cpu-buffers-to-llvm=vectorize=false"]]
    raise ValueError(which)


def pipe(cmds, text):
    for cmd in cmds:
        code, out, err = run(cmd, text)
        if code != 0:
            return code, out, err
        text = out
    return 0, text, ""


def execute(tools, module, which):
    code, llvm, err = pipe(lower_cmds(tools, which), module)
    if code != 0:
        return code, None, err
    # Unoptimized: each program runs once on small inputs, where LLVM's -O2
    # costs more than it saves (what is checked is the rewrite, not LLVM).
    code, out, err = run([tools.runner, "-O0", "-e", "main",
                          "-entry-point-result=void",
                          "-shared-libs=" + tools.libs], llvm)
    return code, out, err


def check(p, tools):
    """Runs one program; returns (outcome, detail, raised, norms)."""
    program = gen_program(p)
    norms = 1 + int(p["chain"])
    code, _, err = run([tools.opt, "-"], program)
    if code != 0:
        return "generator", err.strip()[-300:], 0, norms
    opt = "--flashnorm" + ("=" + p["options"] if p["options"] else "")
    code, rewritten, err = run([tools.opt, "-", opt,
                                "--remarks-filter=flashnorm",
                                "--remark-format=emitRemark"], program)
    if code == "timeout":
        return "hang", opt, 0, norms
    if crashed(code, err):
        return "crash", opt + ": " + err.strip()[-300:], 0, norms
    if code != 0:
        return "verifier", opt + ": " + err.strip()[-300:], 0, norms
    raised = len(re.findall(r"flashnorm-raise .*raised a", err))
    code, ref, err = execute(tools, program, "ref")
    if code != 0:
        return "generator", "original does not run: " + err[-300:], \
            raised, norms
    want = numbers(ref)
    for which in p["lowerings"]:
        if which == "gpu":
            code, _, err = run([tools.opt, "-",
                                "--flashnorm-gpu-pipeline=format=isa"],
                               rewritten)
            if code == "timeout":
                return "hang", "gpu", raised, norms
            if crashed(code, err):
                return "crash", "gpu: " + err.strip()[-300:], raised, norms
            if code != 0:
                return "verifier", "gpu: " + err.strip()[-300:], raised, norms
            continue
        code, out, err = execute(tools, rewritten, which)
        if code == "timeout":
            return "hang", which, raised, norms
        if crashed(code, err):
            return "crash", which + ": " + err.strip()[-300:], raised, norms
        if code != 0:
            return "verifier", which + ": " + err.strip()[-300:], raised, \
                norms
        bad = compare(want, numbers(out), p["dtype"])
        if bad:
            return "miscompile", which + ": " + bad, raised, norms
    return ("ok" if raised >= norms else "refusal"), "", raised, norms


def compare(want, got, dtype):
    if len(want) != len(got):
        return "%d results, %d expected" % (len(got), len(want))
    tol = TOLERANCE[dtype]
    for i, (a, b) in enumerate(zip(want, got)):
        if len(a) != len(b):
            return "result %d: %d numbers, %d expected" % (i, len(b), len(a))
        finite = [v for v in a if math.isfinite(v)]
        if len(finite) != len(a):
            continue  # the original is out of range itself
        top = max((abs(v) for v in a), default=0.0)
        for j, (x, y) in enumerate(zip(a, b)):
            if not math.isfinite(y) or abs(x - y) > tol * max(top, 1e-30):
                return "result %d element %d: %g, expected %g (tol %g of %g)" \
                    % (i, j, y, x, tol, top)
    return ""


def minimize(p, outcome, tools):
    """Shrinks the parameters while the outcome stays the same."""
    simpler = {
        "rows": [1], "k": [8, 1], "n": [1, 8], "projections": [1],
        "tied": [False], "residual": [False], "chain": [False],
        "input": ["plain"], "gain": ["none", "random"], "dtype": ["f32"],
        "transposed": [False], "options": [""], "eps": [1e-5],
        "rsqrt": ["rsqrt"], "mean_div": [False], "lowerings": [["ref"]],
    }
    best, changed = dict(p), True
    while changed:
        changed = False
        for key, values in simpler.items():
            for v in values:
                if best.get(key) == v:
                    break
                trial = dict(best, **{key: v})
                if trial["gain"] == "argument" and key == "options":
                    continue
                if check(trial, tools)[0] == outcome:
                    best, changed = trial, True
                    break
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0:50", help="A:B, a range of seeds")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "..", "..", "build", "bin"))
    ap.add_argument("--mlir-lib-dir", default="/usr/lib/llvm-22/lib")
    ap.add_argument("--out", help="write failing (minimized) programs here")
    ap.add_argument("--no-minimize", action="store_true")
    ap.add_argument("--print", metavar="SEED", type=int,
                    help="print the program of one seed and exit")
    args = ap.parse_args()
    if args.print is not None:
        sys.stdout.write(gen_program(random_params(random.Random(args.print))))
        return 0
    m = re.fullmatch(r"(\d+):(\d+)", args.seeds)
    if not m or int(m.group(1)) >= int(m.group(2)):
        ap.error("--seeds must be A:B with A < B")
    if args.jobs < 1:
        ap.error("--jobs must be >= 1")
    tools = Tools(args.bin, args.mlir_lib_dir)
    if not os.access(tools.opt, os.X_OK):
        ap.error("no flashnorm-opt in %s" % args.bin)
    seeds = range(int(m.group(1)), int(m.group(2)))
    params = {s: random_params(random.Random(s)) for s in seeds}
    start = time.time()
    outcomes, rates, failures = {}, {}, []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(check, params[s], tools): s for s in seeds}
        for f in concurrent.futures.as_completed(futures):
            s = futures[f]
            outcome, detail, raised, norms = f.result()
            p = params[s]
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            form = p["form"]
            # Norms over no features, and without an epsilon (a zero row
            # divides by 0), are not claimed by the raise.
            if p["k"] > 0 and p["eps"] > 0:
                got, total = rates.get(form, (0, 0))
                rates[form] = (got + min(raised, norms), total + norms)
            if outcome not in ("ok", "refusal"):
                failures.append((s, outcome, detail))
    failures.sort()
    for s, outcome, detail in failures:
        p = params[s]
        line = "FAIL seed %d: %s: %s" % (s, outcome, detail.replace("\n", " "))
        print(line[:400])
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            q = p if args.no_minimize else minimize(p, outcome, tools)
            path = os.path.join(args.out, "seed%d-%s.mlir" % (s, outcome))
            with open(path, "w") as f:
                f.write("// flashnorm-fuzz seed %d: %s\n// params: %s\n" % (
                    s, outcome, json.dumps(q, sort_keys=True)))
                f.write(gen_program(q))
            print("  minimized: %s" % path)
    print("outcomes: " + " ".join("%s=%d" % kv for kv in sorted(
        outcomes.items())))
    print("raised per form: " + " ".join(
        "%s=%d/%d (%.0f%%)%s" % (f, g, t, 100.0 * g / t if t else 0,
                                 "" if f in RECOGNIZED else " [not claimed]")
        for f, (g, t) in sorted(rates.items())))
    print("%d programs in %.0f s" % (len(seeds), time.time() - start))
    passed = len(seeds) - len(failures)
    print("%d passed, %d failed" % (passed, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
