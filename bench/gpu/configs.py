"""The GPU benchmark's configurations and the programs they compile.

Shared by scripts/gpu-kit.sh, which compiles every build ahead of time
(`configs.py programs DIR` writes DIR/<build>.mlir and DIR/configs.json),
and by bench.py, which times them on a GPU machine beside cuBLAS and torch.

A build is one (shape, tokens, dtype, variant): the program
  y = rms_norm(x) W^T        (weightless: a model's gain is folded offline)
with W in nn.Linear's layout, N x K, as a PyTorch user holds it, or the
projection alone, y = round(x W^T) with the same f32 accumulator and one
rounding, so that "the projection alone" is the limit of the same kernel
family. `--flashnorm` defers the norm's 1/RMS past the projection; each
variant is a flashnorm-gpu-pipeline configuration.
"""
import json
import os
import sys

# (model, K, N): the q/o (K x K) and up/gate (K x ffn) projections.
SHAPES = [
    ("SmolLM2-135M", 576, 576),
    ("SmolLM2-135M", 576, 1536),
    ("Llama-3-8B", 4096, 4096),
    ("Llama-3-8B", 4096, 14336),
]
TOKENS = [1, 16, 512, 4096]
DTYPES = ["f16", "bf16"]
EPS = 1e-5

# variant -> (has the norm, flashnorm-gpu-pipeline options). Every build
# takes and returns device buffers (host-buffers=false).
# The generated-kernel variants say gemm=codegen: the pipeline's default,
# gemm=auto, is fused at decode and cublaslt at prefill.
VARIANTS = {
    # What a user gets: the pipeline's own defaults (defer-mode=auto:
    # fused at 1 token, and at 16 on tensor cores; gemm=auto: cuBLASLt at
    # prefill).
    "default": (True, ""),
    "serial": (True, "defer-mode=serial gemm=codegen"),
    "streams": (True, "defer-mode=streams gemm=codegen"),
    "fused": (True, "defer-mode=fused gemm=codegen"),
    "cublaslt": (True, "defer-mode=streams gemm=cublaslt"),
    "projection": (False, "defer-mode=serial gemm=codegen"),
    "projection-cublaslt": (False, "defer-mode=serial gemm=cublaslt"),
}
# Timed modes: each runs a variant's build, streams+graphs with the
# runtime's CUDA-graph mode on.
MODES = {
    "default": "default",
    "serial": "serial",
    "streams": "streams",
    "streams+graphs": "streams",
    "fused": "fused",
    "cublaslt": "cublaslt",
    "projection": "projection",
    "projection-cublaslt": "projection-cublaslt",
}
COMMON_OPTIONS = "host-buffers=false chip=sm_90 format=bin"


def build_name(k, n, m, dtype, variant):
    return "%dx%d_m%d_%s_%s" % (k, n, m, dtype, variant)


def build(model, k, n, m, dtype, variant):
    norm, options = VARIANTS[variant]
    return {
        "name": build_name(k, n, m, dtype, variant),
        "model": model, "k": k, "n": n, "m": m,
        "dtype": dtype, "variant": variant, "norm": norm,
        "options": options + " " + COMMON_OPTIONS,
        "cublaslt": "gemm=cublaslt" in options,
    }


def builds():
    """Every build, in table order."""
    for model, k, n in SHAPES:
        for dtype in DTYPES:
            for m in TOKENS:
                for variant in VARIANTS:
                    yield build(model, k, n, m, dtype, variant)


def sample():
    """One shape per (dtype, tokens, variant), in turn: every pipeline
    configuration the benchmark builds, each variant at every shape and
    every token count, in a quarter of the builds (what CI compiles and
    loads; a GPU machine gets every build)."""
    i = 0
    for dtype in DTYPES:
        for m in TOKENS:
            for variant in VARIANTS:
                model, k, n = SHAPES[i % len(SHAPES)]
                i += 1
                yield build(model, k, n, m, dtype, variant)


def program(b):
    """@bench(x: M x K, w: N x K) -> M x N with the C interface
    (_mlir_ciface_bench(result, x, w), memref descriptors)."""
    m, k, n, t = b["m"], b["k"], b["n"], b["dtype"]
    x, w = "tensor<%dx%dx%s>" % (m, k, t), "tensor<%dx%dx%s>" % (n, k, t)
    # x W^T: the weight read as stored, n by k.
    nk = ("indexing_maps = [affine_map<(m, n, k) -> (m, k)>, "
          "affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ")
    y, acc = "tensor<%dx%dx%s>" % (m, n, t), "tensor<%dx%dxf32>" % (m, n)
    lines = ["func.func @bench(%%x: %s, %%w: %s) -> %s "
             "attributes {llvm.emit_c_interface} {" % (x, w, y)]
    if b["norm"]:
        # f16 accumulation here; --flashnorm makes the deferred projection
        # accumulate in f32 and round once in the post-scale.
        lines += [
            "  %%in = flashnorm.rms_norm %%x eps(%.6e) : %s" % (EPS, x),
            "  %%z = arith.constant 0.0 : %s" % t,
            "  %%e = tensor.empty() : %s" % y,
            "  %%f = linalg.fill ins(%%z : %s) outs(%%e : %s) -> %s" % (t, y, y),
            "  %%y = linalg.matmul %sins(%%in, %%w : %s, %s) outs(%%f : %s) -> %s"
            % (nk, x, w, y, y),
        ]
    else:
        lines += [
            "  %z = arith.constant 0.0 : f32",
            "  %%e = tensor.empty() : %s" % acc,
            "  %%f = linalg.fill ins(%%z : f32) outs(%%e : %s) -> %s"
            % (acc, acc),
            "  %%p = linalg.matmul %sins(%%x, %%w : %s, %s) outs(%%f : %s) -> %s"
            % (nk, x, w, acc, acc),
            "  %%o = tensor.empty() : %s" % y,
            "  %%y = linalg.generic {indexing_maps = [affine_map<(i, j) -> "
            "(i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = "
            "[\"parallel\", \"parallel\"]} ins(%%p : %s) outs(%%o : %s) {" % (acc, y),
            "  ^bb0(%%a: f32, %%b: %s):" % t,
            "    %%r = arith.truncf %%a : f32 to %s" % t,
            "    linalg.yield %%r : %s" % t,
            "  } -> %s" % y,
        ]
    lines += ["  return %%y : %s" % y, "}", ""]
    return "\n".join(lines)


def main(argv):
    if len(argv) not in (3, 4) or argv[1] != "programs" or \
            argv[3:] not in ([], ["--sample"]):
        sys.stderr.write("usage: configs.py programs DIR [--sample]\n")
        return 2
    out = argv[2]
    os.makedirs(out, exist_ok=True)
    all_builds = list(sample() if argv[3:] else builds())
    for b in all_builds:
        with open(os.path.join(out, b["name"] + ".mlir"), "w") as f:
            f.write(program(b))
    with open(os.path.join(out, "configs.json"), "w") as f:
        json.dump({"builds": all_builds, "modes": MODES, "eps": EPS}, f,
                  indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
