#!/usr/bin/env python3
"""Norm + projection on a GPU: flashnorm's builds beside cuBLAS and torch.

Runs on a GPU machine from a kit made by scripts/gpu-kit.sh (docs/GPU.md):
every build there is a shared object whose `_mlir_ciface_bench(result, x, w)`
takes device buffers and returns a device allocation. In one process, for
each (shape, tokens, dtype), it times
  default (the pipeline's own options), serial, streams, fused,
  streams+graphs, cublaslt                           rms_norm(x) W^T, deferred
  projection, projection-cublaslt                    round(x W^T), f32 accumulator
  torch-matmul        F.linear(x, W) through torch (cuBLAS): the projection's
                      real limit
  torch-matmul+graphs the same call captured in a CUDA graph and replayed
                      (Llama-sized shapes): cuBLAS without Python's launch
                      overhead, beside the streams+graphs build
  torch-rmsnorm+mm    F.linear(F.rms_norm(x, gain), W): what a user has
  torch-read(+graphs) W.sum() in f32, 1 token only: W's bytes read once by
                      torch's reduction, the practical limit of a decode
                      projection at this size
with W in nn.Linear's layout, N x K (out_features x in_features)
and the roofline max(bytes / HBM bandwidth, flops / tensor rate). Weights are
rotated over enough copies that every call reads them from HBM, not L2.
Times are CUDA-event medians of at least 20 calls after warm-up: flashnorm's
from the runtime's episode events (first stream to last synchronization; in
graph mode around the graph launch), torch's around the call on its stream.
Every output is checked against rms_norm(x) W^T in f32 (tolerance 1e-2
relative to the row's largest value: f32 accumulation, one rounding).

Prints a markdown table (also --out), geometric means, and last the line
  gpu: decode_bw_frac=X prefill_vs_cublas=Y flashnorm_vs_serial=Z flashnorm_vs_torch=W
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time

HBM_BYTES_PER_S = 4.8e12   # H200 datasheet (4.3e12 measured in copies)
TENSOR_FLOPS = 989e12      # H100/H200 dense f16/bf16 datasheet
L2_BYTES = 60 << 20
TOLERANCE = 1e-2
FLASHNORM_MODE = "default"  # what --flashnorm-gpu-pipeline builds by default


class Memref2D(ctypes.Structure):
    _fields_ = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                ("offset", ctypes.c_int64), ("sizes", ctypes.c_int64 * 2),
                ("strides", ctypes.c_int64 * 2)]


def descriptor(t):
    rows, cols = t.shape
    d = Memref2D()
    d.allocated = d.aligned = t.data_ptr()
    d.offset = 0
    d.sizes[0], d.sizes[1] = rows, cols
    d.strides[0], d.strides[1] = t.stride(0), t.stride(1)
    return d


def geomean(values):
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    if not values:
        return float("nan")
    return math.exp(sum(math.log(v) for v in values) / len(values))


class Runtime:
    """The project's CUDA runtime, loaded once for every build (RTLD_GLOBAL:
    the builds resolve their mgpu* calls against it)."""

    def __init__(self, lib_dir):
        self.lib = ctypes.CDLL(
            os.path.join(lib_dir, "libflashnorm_cuda_runtime.so"),
            mode=ctypes.RTLD_GLOBAL)
        self.lib.mgpuFlashNormSetTiming.argtypes = [ctypes.c_bool]
        self.lib.mgpuFlashNormLastEpisodeMs.restype = ctypes.c_double
        self.lib.mgpuFlashNormSetGraphs.argtypes = [ctypes.c_bool]
        self.lib.mgpuFlashNormSetGraphs.restype = ctypes.c_bool
        self.lib.mgpuMemFree.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self.lib.mgpuMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                        ctypes.c_uint64, ctypes.c_void_p]
        self.lib.mgpuStreamSynchronize.argtypes = [ctypes.c_void_p]


class Build:
    """One compiled configuration."""

    def __init__(self, rt, path):
        self.rt = rt
        self.so = ctypes.CDLL(path)  # its constructor loads the cubins
        self.fn = self.so._mlir_ciface_bench
        self.fn.argtypes = [ctypes.POINTER(Memref2D)] * 3
        self.fn.restype = None

    def call(self, x, w):
        result = Memref2D()
        self.fn(ctypes.byref(result), ctypes.byref(descriptor(x)),
                ctypes.byref(descriptor(w)))
        return result

    def free(self, result):
        self.rt.lib.mgpuMemFree(result.allocated, None)

    def output(self, torch, x, w, m, n, dtype):
        """Runs once; the result copied into a torch tensor."""
        result = self.call(x, w)
        if (result.sizes[0], result.sizes[1]) != (m, n) or \
                (result.strides[0], result.strides[1]) != (n, 1):
            raise RuntimeError("unexpected result layout")
        y = torch.empty((m, n), dtype=dtype, device="cuda")
        src = result.aligned + result.offset * y.element_size()
        self.rt.lib.mgpuMemcpy(y.data_ptr(), src, m * n * y.element_size(),
                               None)
        self.rt.lib.mgpuStreamSynchronize(None)
        self.free(result)
        return y


def median_ms(run_once, runs, warmup):
    for _ in range(warmup):
        run_once()
    return statistics.median(run_once() for _ in range(runs))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kit", default=os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), help="the kit folder")
    p.add_argument("--out", help="also write the table here")
    p.add_argument("--json", help="write every measurement here")
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--budget-s", type=float, default=240,
                   help="skip what is left after this many seconds")
    p.add_argument("--only", action="append", default=[],
                   help="run only builds whose name contains this (for ncu)")
    args = p.parse_args()
    if args.runs < 1 or args.warmup < 0:
        p.error("--runs must be >= 1 and --warmup >= 0")

    import torch  # after argument checks: importing it takes seconds
    torch.cuda.init()
    torch.empty(1, device="cuda")  # the primary context the runtime shares
    rt = Runtime(os.path.join(args.kit, "lib"))
    rt.lib.mgpuFlashNormSetTiming(True)
    with open(os.path.join(args.kit, "bench", "configs.json")) as f:
        configs = json.load(f)
    modes, eps = configs["modes"], configs["eps"]
    dtypes = {"f16": torch.float16, "bf16": torch.bfloat16}

    groups = {}
    for b in configs["builds"]:
        if args.only and not any(o in b["name"] for o in args.only):
            continue
        key = (b["model"], b["k"], b["n"], b["m"], b["dtype"])
        groups.setdefault(key, {})[b["variant"]] = b

    out = open(args.out, "w") if args.out else None

    def line(text):
        print(text, flush=True)
        if out:
            out.write(text + "\n")
            out.flush()

    line("| model | K->N | tokens | dtype | mode | median us | x torch.matmul "
         "| x projection | roofline frac | max rel err | check |")
    line("|---|---|---:|---|---|---:|---:|---:|---:|---:|---|")
    start = time.time()
    records, failures, skipped = [], 0, 0
    gen = torch.Generator(device="cuda")
    for (model, k, n, m, dtype), variants in groups.items():
        if time.time() - start > args.budget_s:
            skipped += 1
            continue
        tdt = dtypes[dtype]
        gen.manual_seed(k * 31 + n * 7 + m)
        w_bytes = k * n * 2
        copies = max(1, math.ceil(3 * L2_BYTES / w_bytes))
        ws = [torch.rand((n, k), generator=gen, device="cuda",
                         dtype=torch.float32).sub_(0.5).mul_(2).to(tdt)
              for _ in range(copies)]
        x = torch.randn((m, k), generator=gen, device="cuda").to(tdt)
        gain = torch.ones(k, device="cuda", dtype=tdt)
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        want = {True: normed @ ws[0].float().T, False: xf @ ws[0].float().T}
        torch.cuda.synchronize()
        roofline_us = 1e6 * max(2 * (m * k + k * n + m * n) / HBM_BYTES_PER_S,
                                2 * m * k * n / TENSOR_FLOPS)
        times = {}

        def rotate():
            rotate.i = (rotate.i + 1) % copies
            return ws[rotate.i]
        rotate.i = 0

        # torch first: the reference every ratio is taken against.
        def torch_timed(body):
            # Created (and first recorded) outside the timed region: an
            # event is made lazily at its first record.
            s, e = torch.cuda.Event(True), torch.cuda.Event(True)
            s.record()
            e.record()

            def once():
                w = rotate()
                s.record()
                body(w)
                e.record()
                e.synchronize()
                return s.elapsed_time(e)
            return 1e3 * median_ms(once, args.runs, args.warmup)
        def torch_graph_timed(body):
            # Each weight copy's call captured once and replayed: cuBLAS
            # without Python's launch overhead, as a graph-mode build runs.
            # Only where the copies are few (the Llama-sized shapes): a
            # graph per copy of a small weight would be hundreds.
            if copies > 8:
                return None
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up outside the capture
                for w in ws:
                    body(w)
            torch.cuda.current_stream().wait_stream(side)
            graphs = []
            for w in ws:
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    body(w)
                graphs.append(g)
            s, e = torch.cuda.Event(True), torch.cuda.Event(True)
            s.record()
            e.record()

            def once():
                rotate()
                s.record()
                graphs[rotate.i].replay()
                e.record()
                e.synchronize()
                return s.elapsed_time(e)
            return 1e3 * median_ms(once, args.runs, args.warmup)
        linear = torch.nn.functional.linear
        times["torch-matmul"] = torch_timed(lambda w: linear(x, w))
        try:
            graphed = torch_graph_timed(lambda w: linear(x, w))
        except Exception as e:  # a failed capture costs the row, not the run
            print("torch-matmul+graphs: %s" % e, file=sys.stderr)
            graphed = None
        if graphed is not None:
            times["torch-matmul+graphs"] = graphed
        times["torch-rmsnorm+mm"] = torch_timed(
            lambda w: linear(torch.nn.functional.rms_norm(
                x, (k,), gain, eps), w))
        if m == 1:
            # The weight read once by torch's own reduction, eager and from
            # a graph: what streaming these bytes costs on this GPU, launch,
            # ramp and drain included (a 33.5 MB weight cannot reach the
            # datasheet's rate that a 117 MB one nearly does), the decode
            # projection's practical limit beside the roofline.
            def read(w):
                return w.sum(dtype=torch.float32)
            try:
                times["torch-read"] = torch_timed(read)
                graphed = torch_graph_timed(read)
            except Exception as e:  # costs the row, not the run
                print("torch-read: %s" % e, file=sys.stderr)
                graphed = None
            if graphed is not None:
                times["torch-read+graphs"] = graphed
        errors, verdicts = {}, {}
        loaded = {}
        for mode, variant in modes.items():
            if variant not in variants:
                continue
            b = variants[variant]
            try:
                if variant not in loaded:
                    loaded[variant] = Build(
                        rt, os.path.join(args.kit, "bench", b["name"] + ".so"))
                build = loaded[variant]
                graphs = mode == "streams+graphs"
                if graphs:
                    rt.lib.mgpuFlashNormSetGraphs(True)

                def once():
                    r = build.call(x, rotate())
                    ms = rt.lib.mgpuFlashNormLastEpisodeMs()
                    build.free(r)
                    if ms < 0:
                        raise RuntimeError("the runtime timed no episode")
                    return ms
                verdict = "ok"
                try:
                    times[mode] = 1e3 * median_ms(once, args.runs,
                                                  args.warmup)
                    y = build.output(torch, x, ws[0], m, n, tdt).float()
                finally:
                    # Off again whatever happened: later modes run eagerly.
                    if graphs and not rt.lib.mgpuFlashNormSetGraphs(False):
                        verdict = "FELL BACK TO EAGER"
                ref = want[b["norm"]]
                rows = (y - ref).abs().amax(-1) / ref.abs().amax(-1)
                err = float(rows.max()) if not torch.isnan(y).any() \
                    else float("nan")
                if not err <= TOLERANCE:
                    verdict = "MISMATCH"
            except Exception as e:  # one failing build must not end the run
                times[mode], err, verdict = float("nan"), float("nan"), \
                    "ERROR: %s" % e
            errors[mode], verdicts[mode] = err, verdict
            failures += verdict != "ok"

        prefix = "| %s | %d->%d | %d | %s | " % (model, k, n, m, dtype)
        for mode in list(modes) + ["torch-matmul", "torch-matmul+graphs",
                                   "torch-rmsnorm+mm", "torch-read",
                                   "torch-read+graphs"]:
            if mode not in times:
                continue
            t = times[mode]
            base = "projection-cublaslt" if "cublaslt" in mode else "projection"
            vs_proj = t / times[base] if base in times and mode in modes and \
                mode != base else float("nan")
            line(prefix + "%s | %.1f | %.2f | %s | %.2f | %s | %s |" % (
                mode, t, t / times["torch-matmul"],
                "%.2f" % vs_proj if math.isfinite(vs_proj) else "-",
                roofline_us / t,
                "%.1e" % errors[mode] if mode in errors else "-",
                verdicts.get(mode, "ref")))
            records.append({"model": model, "k": k, "n": n, "m": m,
                            "dtype": dtype, "mode": mode, "us": t,
                            "roofline_us": roofline_us,
                            "err": errors.get(mode), "check":
                            verdicts.get(mode, "ref")})
        del ws, loaded
        torch.cuda.empty_cache()
        if args.json:  # as it goes: a driver abort keeps what was measured
            with open(args.json, "w") as f:
                json.dump(records, f, indent=1)

    def ratio(mode_a, mode_b, where):
        pairs = {}
        for r in records:
            if where(r):
                pairs.setdefault((r["k"], r["n"], r["m"], r["dtype"]),
                                 {})[r["mode"]] = r
        return geomean([v[mode_a]["us"] / v[mode_b]["us"]
                        for v in pairs.values()
                        if mode_a in v and mode_b in v])

    decode = [r["roofline_us"] / r["us"] for r in records
              if r["m"] == 1 and r["mode"] == FLASHNORM_MODE]
    everything = lambda r: True
    prefill = lambda r: r["m"] >= 512
    line("")
    line("geomean over shapes, dtypes and tokens: " + " ".join(
        "%s/serial=%.2f" % (mode, ratio(mode, "serial", everything))
        for mode in ("default", "streams", "fused", "streams+graphs",
                     "cublaslt")) +
        " projection/torch-matmul=%.2f" % ratio("projection", "torch-matmul",
                                                everything) +
        " prefill cublaslt/torch-matmul=%.2f" % ratio(
            "cublaslt", "torch-matmul", prefill))
    if skipped:
        line("SKIPPED: %d shape/token/dtype groups over the %.0f s budget"
             % (skipped, args.budget_s))
    line("bench: %d records, %d failed checks, %.0f s" % (
        len(records), failures, time.time() - start))
    one_token = lambda r: r["m"] == 1
    line("decode against reading the weight once (torch's reduction, 1 "
         "token): projection/torch-read=%.2f "
         "streams+graphs/torch-read+graphs=%.2f" % (
             ratio("projection", "torch-read", one_token),
             ratio("streams+graphs", "torch-read+graphs", one_token)))
    line("gpu: decode_bw_frac=%.3f prefill_vs_cublas=%.2f "
         "flashnorm_vs_serial=%.3f flashnorm_vs_torch=%.3f" % (
             geomean(decode),
             ratio(FLASHNORM_MODE, "torch-matmul", prefill),
             ratio(FLASHNORM_MODE, "serial", everything),
             ratio(FLASHNORM_MODE, "torch-rmsnorm+mm", everything)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
