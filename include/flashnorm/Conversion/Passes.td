#ifndef FLASHNORM_CONVERSION_PASSES_TD
#define FLASHNORM_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToLinalg : Pass<"flashnorm-lower-to-linalg"> {
  let summary = "Lower flashnorm ops to linalg, arith, math and tensor";
  let description = [{
    Every `flashnorm` op becomes `linalg.generic`s on tensors: a reduction
    for the sum of squares, an element-wise 1/RMS, and an element-wise
    normalize (or post-scale), honouring each op's precision contract, so
    that any upstream bufferization and lowering pipeline runs the result.
    Dynamic row dimensions are supported.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect"
  ];
  let options = [
    Option<"statsF64", "stats-f64", "bool", /*default=*/"false",
           "Accumulate the statistics in f64 instead of f32 (f64 inputs "
           "always use f64)">,
    Option<"sumLanes", "sum-lanes", "int64_t", /*default=*/"0",
           "Sum each row of a statistic in this many partial sums, then add "
           "them (rows divisible by it; the CPU pipeline asks for one vector "
           "width, so the sum stays in a register; default 0: one sum)">,
  ];
}

def AsyncMark : Pass<"flashnorm-async-mark", "func::FuncOp"> {
  let summary = "Mark deferred norms for the CPU async schedule";
  let description = [{
    For every `flashnorm.post_scale` whose scale is a `flashnorm.rms_inv` or
    `flashnorm.layer_inv`, marks the statistic, the projection that produces
    the post-scale's input and the post-scale with one group id and their
    roles. The marks survive `flashnorm-lower-to-linalg` and bufferization;
    `flashnorm-async-schedule` turns them into `async.execute` regions.

    The cost rule: a statistic whose input has a static shape of fewer than
    `min-stat-bytes` bytes stays serial (unmarked, with a remark): two task
    launches and a join cost more than such a statistic takes to run beside
    the projection. (flashnorm-pack-weights further unmarks groups whose
    projection it splits over the cores.)
  }];
  let options = [
    Option<"minStatBytes", "min-stat-bytes", "int64_t", /*default=*/"0",
           "Statistics reading fewer bytes run serially (default 0: every "
           "group is marked; flashnorm-cpu-pipeline passes its "
           "concurrent-min-bytes, 16 MiB)">,
  ];
}

def AsyncSchedule : Pass<"flashnorm-async-schedule", "ModuleOp"> {
  let summary = "Run each deferred norm's statistic and projection concurrently";
  let description = [{
    On bufferized code marked by `flashnorm-async-mark`: the ops of each
    group's statistic go into one `async.execute`, placed where the group's
    first projection starts; each projection into its own `async.execute`;
    and before every post-scale an `async.await` of the statistic's token and
    of its projection's token (the explicit join, docs/MATH.md §6). Groups
    whose ops are not all in one block are left serial (reported).

    A module pass that rewrites its functions one by one: whether a task may
    run beside a call depends on what the callee does (CallEffects), read
    before any function is rewritten.

    Remarks: `--remarks-filter=flashnorm`.
  }];
  let dependentDialects = ["::mlir::async::AsyncDialect"];
  let options = [
    Option<"projectionTasks", "projection-tasks", "bool", /*default=*/"true",
           "Run each projection as a task of its own (default true; false: in "
           "place, on the caller's thread or stream, only the statistic "
           "forks)">,
    Option<"keepMarks", "keep-marks", "bool", /*default=*/"false",
           "Keep the group/role marks on the scheduled ops (default false; "
           "the GPU pipeline names its kernels after them)">,
    Option<"deviceFunctionsOnly", "device-functions-only", "bool",
           /*default=*/"false",
           "Schedule only the functions flashnorm-gpu-kernels compiles for "
           "the GPU (default false; the GPU pipeline sets it: a host driver "
           "keeps its ops in order)">,
  ];
}

def CpuHostTarget : Pass<"flashnorm-cpu-host-target", "ModuleOp"> {
  let summary = "Marks an LLVM module and its functions for this machine's "
                "CPU";
  let description = [{
    flashnorm-cpu-pipeline sizes its kernels for this machine's vector
    registers; code compiled ahead of time from its output must target the
    same CPU (llc's default x86-64 target has 16 SSE registers). Sets the
    module's `llvm.target_triple` to this process's triple and, on each
    LLVM function the module defines, `target_cpu` and `target_features` to
    this CPU's name and features (what llc and clang compile each function
    for), keeping any already set. The last pass of
    flashnorm-cpu-pipeline unless `host-target=false`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def CpuCodegen : Pass<"flashnorm-cpu-codegen", "func::FuncOp"> {
  let summary = "Register-blocked projections and vectorized linalg on buffers";
  let description = [{
    Projections (contractions, roles from `inferContractionDims`) become
    register-blocked micro-kernels: tiled to a row block by an output
    block, one k at a time, sized for the vector registers (`vector-bits`,
    by default this machine's: decode, fewer than 4 rows, M x 256 on
    AVX-512 and M x 64 on AVX2; otherwise 8 x 32 and 4 x 16, accumulators
    in half of the registers; a packed weight's panel is one output
    block), row blocks
    outside output tiles (a packed projection is one contraction per
    panel, whose weights every row block reads from cache); each tile is
    vectorized into a `vector.contract` (broadcasts and FMAs after the
    vector lowering); the tiles' subviews are folded into the transfers and
    the accumulator hoisted out of the k loop, so it stays in registers.
    On a K x N weight in its stored layout (nothing packed it), decode
    takes k outside the output tiles instead, 8 rows at a time, so that
    whole rows of the weight stream (the accumulator read from L1), and
    prefill copies blocks of 256 rows by 128 KiB of outputs into a
    contiguous buffer (on the stack; on the heap per core's chunk) that
    every row block then reads from cache; from
    `parallel-min-bytes` its outputs are first split into one chunk per
    core (an `scf.forall`).
    A contraction whose inputs are both contiguous along k (an N x K
    weight that nothing packed, q k^T) is split along k into `vector-width`
    lanes of partial sums instead (one register of f32 by default), in
    blocks of up to 16 rows by the outputs whose partial sums fit 32 KiB:
    per block an element-wise multiply-add of contiguous vectors (register
    tiles of 4 x 4 on AVX-512 and 2 x 4 on AVX2, or 1 x 8 for decode,
    lanes wide; `tile-sizes` m and n set them), then one
    horizontal sum per output. The blocks are split over the cores (an
    `scf.forall`, each block its own buffer of partial sums) where the
    weight has at least `parallel-min-bytes` and more than one thread is
    asked for, except inside an async task (which runs beside a
    statistic).
    Every other linalg op is tiled over its innermost loop with
    `vector-width` (one register by default) and vectorized. Tile sizes
    shrink to the largest divisor of the static loop size; ops with
    dynamic sizes are left to
    convert-linalg-to-loops. The panel loops of flashnorm-pack-weights
    become `scf.for` (those marked `flashnorm.serial_panels`) or
    `scf.parallel` (split over the cores).
  }];
  let dependentDialects = [
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
    "::mlir::arith::ArithDialect"
  ];
  let options = [
    Option<"vectorBits", "vector-bits", "int64_t", /*default=*/"0",
           "Width of the vector registers the kernels are sized for: 512 "
           "(AVX-512), 256 (AVX2), 128 (default 0: this machine's)">,
    ListOption<"tileSizes", "tile-sizes", "int64_t",
               "Projection tile sizes (m, n, k); default by shape and "
               "vector-bits: M,256,1 below 4 rows, 8,32,1 from 4 for 512 "
               "bits, M,64,1 and 4,16,1 for 256">,
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"0",
           "Lanes of the split-k kernel and innermost tile of other ops "
           "(default 0: one vector register of f32 for vector-bits, 16 on "
           "AVX-512, 8 on AVX2)">,
    Option<"threads", "threads", "int64_t", /*default=*/"0",
           "Cores a large weight in its stored layout may be split over "
           "(default 0: this machine's hardware threads; 1: none)">,
    Option<"parallelMinBytes", "parallel-min-bytes", "int64_t",
           /*default=*/"1048576",
           "Contractions on a weight in its stored layout of at least this "
           "many bytes run on the cores: split-k blocks, or chunks of a "
           "K x N weight's outputs (default 1 MiB, as "
           "flashnorm-pack-weights)">,
  ];
}

def GpuKernels : Pass<"flashnorm-gpu-kernels", "ModuleOp"> {
  let summary = "Turn the linalg ops of a device function into GPU kernels";
  let description = [{
    In every device function (one whose calls pass no buffers or tensors:
    `whyHostFunction`), each linalg
    op on buffers becomes one `gpu.launch` whose `module`/`function`
    attributes name the kernel `<fn>_<role>_<n>` (`norm_stat`, `proj`,
    `post_scale`, `fused_norm_proj`, `row_sum`, `elementwise`, `fill`, ...):

    - row reductions `out = out + f(ins)` over the last loop (statistics,
      softmax sums, means): one block of `reduce-threads` threads per row,
      a strided loop per thread and a block `gpu.all_reduce` (warp shuffles
      after the NVVM lowering);
    - with `fused`, each projection marked with its statistic and
      post-scale (flashnorm-async-mark) becomes one kernel: it accumulates
      the row's sum of squares (a LayerNorm's sum, then its squared
      deviations from the mean, on the SIMT kernel) from the activations it
      loads for the product and applies 1/RMS (1/std) and the post-scale in
      its epilogue; a tensor-core tile of 2-16 f16/bf16 tokens takes an RMS
      statistic only; the
      statistic's own kernels go away once nothing else reads them; where
      flashnorm-async-schedule put the statistic in a task (the pipeline's
      `defer-mode=auto`), what is left of a task whose projections fused
      runs in its place, its awaits dropped (no fork, no join);
    - with `gemm=cublaslt`, projections over row-major 2-D buffers (unit
      batch dimensions allowed) with an f32 accumulator that starts at zero
      become `flashnorm.gemm_lt` (cuBLASLt on the op's stream); with
      `gemm=auto` (the default) only those with more than 16 rows or a
      dynamic row count (prefill), where cuBLASLt's tiled tensor-core GEMMs
      win, while decode steps keep the generated bandwidth kernel;
    - with `tensor-cores`, f16 and bf16 prefill projections (the weight
      N x K or K x N), 64 rows or more (the last block's padded) and outputs
      and k that are multiples of 64 and 32: block tiles of 128 or 64
      along m and n, whose k tiles of 32 the block copies into a ring of
      four stages in its dynamic shared memory (`nvgpu.device_async_copy`)
      and eight warps read as fragments (`ldmatrix` after
      flashnorm-gpu-mma; the weight's two n-tiles at a time, transposed
      from a K x N weight);
    - with `tensor-cores`, other f16 and bf16 projections with outputs and
      k that are multiples of 8 and 16, two rows or more (the last tile's
      padded) and an f32 accumulator that starts at zero: one warp per
      16 x 8 output tile and slice of k, the k loop `vector.contract`s of
      fragments for flashnorm-gpu-mma; while the kernel has fewer than
      4224 warps (decode) k is split into slices of at least 32 steps,
      whose partial tiles are summed through shared memory in slice order;
    - every other op: parallel loops, tiled by `threads` on the innermost
      dimension (threads x, coalesced), the outer dimensions on blocks; the
      reduction loops of projections run inside each thread;
    - host code left between them that touches buffers (an importer's
      in-place KV-cache update: an `scf.for` nest of `memref.store`) is a
      kernel in its place: parallel over the nest where each store writes
      its own buffer at indices holding every induction variable and nothing
      reads what the nest writes, else the code as it is on one thread.

    Each strategy is a pure plan and a build (lib/Conversion/GpuKernels/).
    A function that hands buffers to another stays on the host, with a
    remark. A module pass that rewrites its functions one by one: whether a
    function is a device function depends on its callees (CallEffects), read
    before any function is rewritten.

    Remarks (`--remarks-filter=flashnorm`) name each kernel and each
    projection that was not fused, with the reason.
  }];
  let dependentDialects = [
    "::mlir::flashnorm::FlashNormDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::affine::AffineDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::vector::VectorDialect"
  ];
  let options = [
    Option<"fused", "fused", "bool", /*default=*/"false",
           "Fuse each deferred norm's statistic into its projections' "
           "kernels (default false)">,
    Option<"threads", "threads", "int64_t", /*default=*/"128",
           "Threads per block of the parallel kernels, on the innermost "
           "dimension (default 128)">,
    Option<"reduceThreads", "reduce-threads", "int64_t", /*default=*/"256",
           "Threads per block (one block per row) of the row reductions "
           "(default 256)">,
    Option<"tensorCores", "tensor-cores", "bool", /*default=*/"true",
           "Generated f16 and bf16 projections with sizes that are multiples of "
           "16 x 8 x 16 use tensor-core MMA, as vector.contract fragments "
           "for flashnorm-gpu-mma (default true)">,
    Option<"gemm", "gemm", "::mlir::flashnorm::GemmPath",
           /*default=*/"::mlir::flashnorm::GemmPath::Auto",
           "Which projections call cuBLASLt (flashnorm.gemm_lt, where the "
           "operands fit) instead of a generated kernel (default auto)",
           [{::llvm::cl::values(
             clEnumValN(::mlir::flashnorm::GemmPath::Codegen, "codegen",
                        "none: generated kernels only"),
             clEnumValN(::mlir::flashnorm::GemmPath::CuBlasLt, "cublaslt",
                        "every projection that fits"),
             clEnumValN(::mlir::flashnorm::GemmPath::Auto, "auto",
                        "prefill (more than 16 rows, or a dynamic count); "
                        "decode keeps the generated kernel"))}]>,
  ];
}

def GpuMma : Pass<"flashnorm-gpu-mma", "func::FuncOp"> {
  let summary = "Tensor-core MMA for the kernels' vector.contract fragments";
  let description = [{
    For each `gpu.launch` holding a `vector.contract` (the tensor-core
    projections of flashnorm-gpu-kernels), gives each lane its registers of
    the warp's fragments and an m16n8k16 `nvvm.mma.sync`, f16 and bf16.
    The lanes' loads and stores are placed by upstream's fragment maps
    (`nvgpu::getLaneIdAndValueIdToOperandCoord`; bf16 by f16's, the same
    layout); a lane's two values along k are one aligned 32-bit load.
    Upstream's vector-to-nvgpu conversion loads global memory 16 bits at a
    time, converts no bf16 and, as a pass, fails on the other kernels'
    scalar code. A fragment read from shared memory (the staged prefill
    kernels) is one `nvgpu.ldmatrix` per lane (x4 for 16 x 16, x2 for
    8 x 16; `.trans` where the buffer's rows run along the fragment's
    rows), where its buffer's rows are a multiple of 16 bytes (the
    pipeline aligns shared buffers to 16: flashnorm-gpu-align-workgroup).
    A half of a 16 x 16 fragment (`vector.extract_strided_slice`, rows
    0-7 or 8-15) is a weight fragment: two n-tiles read by one x4.
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::vector::VectorDialect"
  ];
  let options = [];
}

def GpuReproducibleBinaries : Pass<"flashnorm-gpu-reproducible-binaries",
                                   "ModuleOp"> {
  let summary = "Kernel binaries without their compile times, so that the "
                "pipeline's output depends on its input alone";
  let description = [{
    `gpu-module-to-binary` records in each `#gpu.object`'s properties how
    long the NVVM target took to compile it (`LLVMIRToISATimeInMs`,
    `ISAToBinaryTimeInMs`): two runs on the same module differ in those
    numbers, and in nothing else. This pass drops every property whose name
    ends in `TimeInMs` and keeps the others (the optimization level), so
    that the same input gives the same output, byte for byte (a build cache
    can key on it, a test can compare two runs). flashnorm-gpu-pipeline
    runs it right after `gpu-module-to-binary`.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def GpuAlignWorkgroup : Pass<"flashnorm-gpu-align-workgroup", "ModuleOp"> {
  let summary = "Shared-memory buffers of outlined kernels aligned to 16 "
                "bytes";
  let description = [{
    Each workgroup attribution of a `gpu.func` without an alignment of its
    own gets `llvm.align = 16`, which the NVVM lowering gives the buffer's
    global: LLVM's load-store vectorizer merges a lane's neighbouring
    shared-memory accesses into vector accesses (the split-k kernel's
    `st.shared.v2.b32`) that need more than the element's alignment, which
    is all a buffer is declared with otherwise (`.align 4` for f32). Runs
    in flashnorm-gpu-pipeline right after outlining.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def GpuFusePostScales : Pass<"flashnorm-gpu-fuse-post-scales",
                              "func::FuncOp"> {
  let summary = "Each post-scale fused into its element-wise reader, on "
                "tensors";
  let description = [{
    A deferred norm's post-scale (lowered: a `linalg.generic` marked with
    the role "post") read by exactly one element-wise `linalg.generic` over
    the same rows (a residual add, a bias, a gate) becomes one op with it,
    through upstream's element-wise fusion (linalg::fuseElementwiseOps):
    on the GPU one kernel instead of two, and no round trip of the scaled
    product through memory. The fused op keeps the post-scale's group and
    pair, with the role "post_fused", so the async schedule joins the
    statistic before it and fused mode takes it into the projection's
    epilogue. Refused, with a remark: a post-scale with several readers,
    a reader that is not element-wise over the same rows (a broadcast, a
    reduction) or that belongs to another norm's schedule (a chain of
    post-scales), and the post-scale of a projection that `gemm` hands to
    cuBLASLt (flashnorm-gpu-kernels moves it before the GEMM as a scale of
    the activation; the GEMM then writes the scaled product in the
    post-scale's type, not f32). Runs
    in flashnorm-gpu-pipeline before bufferization.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
  let options = [
    Option<"gemm", "gemm", "::mlir::flashnorm::GemmPath",
           /*default=*/"::mlir::flashnorm::GemmPath::Auto",
           "Which projections flashnorm-gpu-kernels hands to cuBLASLt "
           "(its option of that name; default auto)",
           [{::llvm::cl::values(
             clEnumValN(::mlir::flashnorm::GemmPath::Codegen, "codegen",
                        "none: generated kernels only"),
             clEnumValN(::mlir::flashnorm::GemmPath::CuBlasLt, "cublaslt",
                        "every projection that fits"),
             clEnumValN(::mlir::flashnorm::GemmPath::Auto, "auto",
                        "prefill (more than 16 rows, or a dynamic count); "
                        "decode keeps the generated kernel"))}]>,
  ];
}

def GpuWeightLayout : Pass<"flashnorm-gpu-weight-layout", "func::FuncOp"> {
  let summary = "Projection weights read as N x K, relaid at compile time";
  let description = [{
    The GPU projection kernels read a weight fastest as N x K, each
    output's row contiguous along k. For every projection on tensors (a
    contraction with one n and one k dimension) whose weight is a constant,
    an `ml_program` global or a function argument behind layout-only ops
    (transposes, yield-only generics, unit reshapes): a weight stored N x K
    (PyTorch's nn.Linear) is read directly through an (n, k) indexing map
    and the layout ops between are dropped; a K x N constant is written once,
    at compile time, as N x K by the project's raw-buffer weight folder (a
    permutation, no rounding; projections sharing the constant share the
    copy). No transpose of a constant runs on the device. A K x N global or
    argument keeps its layout (a remark says so). Named projections become
    the `linalg.generic` they stand for, keeping their marks. Runs in
    flashnorm-gpu-pipeline before bufferization.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::arith::ArithDialect"
  ];
}

def GpuStreams : Pass<"flashnorm-gpu-streams", "ModuleOp"> {
  let summary = "Device buffers and the async token graph of a device function";
  let description = [{
    On a function whose kernels are `gpu.launch`es (flashnorm-gpu-kernels):
    memref arguments and mutable globals are copied into `gpu.alloc`ed
    buffers on every call, and the arguments the function writes are copied
    back into the caller's buffers at the end (as the CPU code leaves them:
    an in-place KV-cache update); helper calls that pass no buffers stay
    host calls, in order; constant globals (weights) become
    `flashnorm.resident` device copies, uploaded once per process, so that
    repeated calls move no weight bytes; allocations become `gpu.alloc`,
    copies `gpu.memcpy`, and results are copied back into host allocations.
    Work runs on one main stream; every
    `async.execute` of the async schedule (a deferred norm's statistic or
    projection) forks a stream of its own, and every `async.await` becomes an
    explicit join, `gpu.wait async [%main, %task]`, so that each launch has
    one dependency. The function ends with one host `gpu.wait` listing one
    token of every stream it created: each is synchronized and destroyed
    exactly once, the streams feeding joins included. With device buffers
    (`host-buffers=false`), each argument's address is checked on entry
    (`flashnorm.check_alignment`): the kernels read it in vectors as wide
    as a driver allocation's alignment allows (up to 16 bytes, as far as
    its static size shows), so a view at an element offset aborts with a
    message that names it instead of faulting in a kernel.

    A module pass, like flashnorm-gpu-kernels: it takes the same device
    functions, judged on the module before any function is rewritten.
  }];
  let dependentDialects = [
    "::mlir::flashnorm::FlashNormDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect"
  ];
  let options = [
    Option<"hostBuffers", "host-buffers", "bool", /*default=*/"true",
           "Memref arguments and results are host memory, copied in and "
           "out (default true; false: they are device buffers, aligned as "
           "the driver allocates them (checked on entry), results are "
           "device allocations the caller frees)">,
  ];
}

def VerifyAsync : Pass<"flashnorm-verify-async", "ModuleOp"> {
  let summary = "Prove that conflicting GPU buffer accesses are ordered";
  let description = [{
    For every host function with GPU work, builds the happens-before relation
    of its async token graph (`gpu.wait`, `gpu.launch_func`, `gpu.launch`,
    `gpu.memcpy`, `gpu.memset`, `gpu.alloc`, `gpu.dealloc`, host waits and
    host ops) and checks every pair of operations that touch the same or
    aliasing buffers, at least one of them writing: one must happen before
    the other. Uses of a buffer must also be ordered after its `gpu.alloc` and
    before its `gpu.dealloc`. Kernel reads and writes come from the
    `gpu.func` body (unknown kernels read and write every buffer argument).
    A kernel's accesses to globals of its module count too, and a buffer
    whose address a kernel or the host extracts
    (`memref.extract_aligned_pointer_as_index`) is read and written there.
    A call reads and writes the buffers it is passed and does to the
    globals it (or a function it calls) names what its body does. Views of
    one allocation or argument alias; distinct function arguments are
    assumed not to (the contract of a bufferized function boundary), but an
    argument may be any global the program writes.

    A violation is an error at the later operation, with notes at the other
    operation and at the buffer's definition (docs/MATH.md §6: the
    post-scale that waited on one stream only). Functions whose GPU work sits
    in nested regions or several blocks, that pass GPU tokens to calls, or
    that run host tasks (`async.execute`) beside their GPU work are not
    analyzed (a warning says so).
    `flashnorm-gpu-pipeline` runs this pass on the host code it emits.
  }];
  let options = [];
}

def VerifyStreams : Pass<"flashnorm-verify-streams", "ModuleOp"> {
  let summary = "Check stream and event lifetimes in lowered host code";
  let description = [{
    On host code lowered to the LLVM dialect (calls to the mgpu* runtime
    ABI): every stream from `mgpuStreamCreate` is destroyed exactly once on
    every path to a return (streams that feed a join included), and no event
    is recorded, waited on or synchronized after a path may have destroyed
    it. Each violation is an error at the call. A handle passed to a
    function other than the runtime's is not tracked from there on, with a
    warning; handles passed through block arguments are not tracked.
  }];
  let options = [];
}

def MLProgramToMemRef : Pass<"flashnorm-ml-program-to-memref", "ModuleOp"> {
  let summary = "ml_program globals to memref globals, on tensors";
  let description = [{
    Weights that live outside the IR (`ml_program.global` with
    `#ml_program.extern`, or with a value) and their loads
    (`ml_program.global_load_const`, `ml_program.global_load` of an
    immutable global) become `memref.global` constants and
    `bufferization.to_tensor restrict` of `memref.get_global`, before
    bufferization. An extern global becomes an external `memref.global`
    declaration (public, so LLVM links it): whoever runs the program
    provides its data under the global's name (flashnorm-run --params maps
    it from a safetensors checkpoint). Upstream's ml_program bufferization
    takes neither extern globals nor `global_load_const`.

    A mutable global (a model's state: a KV cache) becomes a writable
    `memref.global`; `ml_program.global_store` a `memref.copy` of the
    value's buffer (`bufferization.to_buffer read_only`) into its
    `memref.get_global`, where the store stands (not computed into the
    global earlier, as empty-tensor elimination would do with a
    `materialize_in_destination`), and each `ml_program.global_load` of a
    global the module stores into a copy of it
    (`bufferization.alloc_tensor copy`): a later store must not change a
    value already loaded. Upstream's
    bufferization of `global_store` (MLIR 22) stores an uninitialized
    buffer instead of the value. The graph forms
    (`global_load_graph`, `global_store_graph`) are an error.
  }];
  let dependentDialects = [
    "::mlir::memref::MemRefDialect",
    "::mlir::bufferization::BufferizationDialect"
  ];
  let options = [];
}

def CheckLoweringInput : Pass<"flashnorm-check-lowering-input", "ModuleOp"> {
  let summary = "Reject input a lowering pipeline would leave half lowered";
  let description = [{
    The first pass of the CPU and GPU lowering pipelines. Their passes run
    on the functions of the module they are given: a nested `builtin.module`
    would come out with its tensors and linalg ops beside LLVM ops from the
    module-wide conversions (exit 0, nothing downstream can use it), so it
    is an error. So is GPU code given to a CPU lowering (any op of the gpu
    dialect: a GPU stage's output, or a kernel), `flashnorm.gemm_lt`
    (flashnorm-gpu-to-kernels' output) given to the GPU one, and resident
    weights (`flashnorm.resident`, flashnorm-gpu-to-streams' output, which
    flashnorm-gpu-streams-to-llvm lowers further) given to either. A
    `gpu.launch` is GPU-pipeline input (a user's own kernel). A module that
    passes is left as it is.
  }];
  let options = [
    Option<"lowering", "lowering", "::mlir::flashnorm::LoweringTarget",
           /*default=*/"::mlir::flashnorm::LoweringTarget::Cpu",
           "What the pipeline lowers to (cpu: no GPU op at all; gpu: no "
           "gemm_lt or resident weights yet)",
           [{::llvm::cl::values(
             clEnumValN(::mlir::flashnorm::LoweringTarget::Cpu, "cpu",
                        "a CPU lowering"),
             clEnumValN(::mlir::flashnorm::LoweringTarget::Gpu, "gpu",
                        "the GPU pipeline or its first stages"))}]>,
  ];
}

def ExpandDynamicReshapes : Pass<"flashnorm-expand-dynamic-reshapes"> {
  let summary = "memref.expand_shape with several dynamic sizes in a group "
                "as a reinterpret_cast";
  let description = [{
    Upstream's expand-strided-metadata (MLIR 22) crashes on a
    `memref.expand_shape` one of whose groups has two dynamic sizes (an
    importer's view of [B*T, N] back to [B, T, N], batch and tokens known
    only at run time): it derives each size from the source's and cannot.
    This pass replaces those ops by a `memref.reinterpret_cast` of the
    source's base with the sizes of `output_shape`, the strides they imply
    within each group (the innermost one the source dimension's stride) and
    the source's offset. The lowering pipelines run it just before
    expand-strided-metadata; other ops are left as they are.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def CpuFoldTransposes : Pass<"flashnorm-cpu-fold-transposes",
                              "func::FuncOp"> {
  let summary = "Contractions read a transposed input in its stored layout";
  let description = [{
    A contraction on tensors whose input is a `linalg.transpose` (or a
    yield-only generic that permutes) of a tensor stored contiguous along k
    (PyTorch's N x K weight transposed to K x N, as importers write
    `x @ W.T`; k transposed for q k^T) reads the stored tensor through the
    composed indexing map instead: no transpose runs per call, and
    flashnorm-cpu-codegen's split-k kernel reads both inputs as contiguous
    vectors. Only where that kernel will take the contraction (both inputs
    then indexed by k last, static sizes, k a multiple of two or more
    `vector-width` vectors): elsewhere a transposed read is a gather and
    the transpose is left as it is. A named contraction becomes the
    equivalent `linalg.generic` (its attributes kept). Runs in
    flashnorm-cpu-pipeline after the packing passes (a constant weight is
    relaid at compile time there).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"0",
           "Lanes of the split-k kernel (flashnorm-cpu-codegen's "
           "vector-width; default 0: one vector register of f32 on this "
           "machine)">,
  ];
}

def PackWeights : Pass<"flashnorm-pack-weights", "func::FuncOp"> {
  let summary = "Store constant projection weights in the CPU kernel's panels";
  let description = [{
    For every projection on tensors (a contraction with one m, one n and
    one k dimension, the output's last dimension n) whose weight is a 2-D
    constant, possibly behind layout ops, in either layout (K x N, or
    PyTorch's N x K): the weight is rewritten at compile time, by the
    project's raw-buffer weight folder, into panels [N / P][K][P], and the
    projection into an `scf.forall` over chunks of consecutive panels (one
    chunk per core when the weight is large enough to split, else one),
    each an inner loop (`flashnorm.serial_panels`) of a `linalg.contract`
    of the activation with one panel into its P output columns.
    flashnorm-cpu-codegen keeps a row tile by P outputs in registers across
    k and reads each panel as one contiguous stream; no weight is relaid at
    run time.

    A post-scale that is the projection's only user runs in each panel's
    epilogue (and a zero accumulator is filled there), while the panel is in
    cache, unless the projection runs on one core beside its statistic in a
    concurrent group (flashnorm-async-mark): then the loop takes the
    projection's marks and the post-scale waits for the join. A projection
    split over the cores leaves no core for a concurrent statistic: its
    group's marks are removed and the group runs serially.

    Prefill on an activation larger than `activation-block-bytes` reads it
    in blocks (256 of k by the rows that fill the budget; GotoBLAS's
    blocking of A): each chunk is a loop over groups of panels whose
    accumulator fills the same budget, each a loop over the blocks, each
    block copied into a contiguous tensor and then read by every panel of
    the group while it is in cache (rather than each panel reading the
    whole activation again); the post-scale then runs over the chunk's
    outputs after its last block. Narrow weights (bf16, f16) read by
    several row tiles have each panel's block (at most 64 KiB widened)
    widened once, before the row tiles read it.

    Projections whose N is not a multiple of P, whose weight is not a
    constant (an argument, an ml_program global) or that have an empty
    dimension are left as they are. Runs in flashnorm-cpu-pipeline after
    flashnorm-async-mark.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::affine::AffineDialect",
    "::mlir::scf::SCFDialect"
  ];
  let options = [
    Option<"panel", "panel", "int64_t", /*default=*/"0",
           "Outputs per panel, the micro-kernel's register tile width "
           "(default 0, by shape and vector-bits: 8 vectors of f32 for "
           "fewer than 4 rows, else 2)">,
    Option<"vectorBits", "vector-bits", "int64_t", /*default=*/"0",
           "Width of the vector registers the kernels are sized for: 512 "
           "(AVX-512), 256 (AVX2), 128 (default 0: this machine's)">,
    Option<"parallelMinBytes", "parallel-min-bytes", "int64_t",
           /*default=*/"1048576",
           "Weights of at least this many bytes are split over the cores "
           "(the panels as an scf.forall); smaller ones run their panels in "
           "a loop (default 1 MiB: below that a task costs more than it "
           "saves)">,
    Option<"threads", "threads", "int64_t", /*default=*/"0",
           "Cores to split a large weight's panels over: one task per core, "
           "each a loop over consecutive panels (default 0: this machine's "
           "hardware threads)">,
    Option<"activationBlockBytes", "activation-block-bytes", "int64_t",
           /*default=*/"::mlir::flashnorm::kActivationBlockBytes",
           "An activation of more bytes (f32 as the kernel reads it) is read "
           "in blocks of at most this many, every panel passing over one "
           "block while it is in cache (default 256 KiB, half an L2; 0: "
           "never)">,
  ];
}

def PackPreparedWeights : Pass<"flashnorm-pack-prepared-weights", "ModuleOp"> {
  let summary = "Argument weights stored in the CPU kernel's panels by the "
                "prepare function";
  let description = [{
    For a function `@f` with a prepare function `@f_flashnorm_prepare`
    (fold-gains' `prepare-function`): each argument it folds
    (`flashnorm.folded`) that only projections read, as a matrix in either
    layout and in panels of one width (as flashnorm-pack-weights chooses
    them), is returned by the prepare function as panels [N / P][K][P]
    (`tensor.expand_shape` and `linalg.transpose` after the fold: once per
    checkpoint), `@f` takes the panels in its place, and each projection
    becomes the loop over panels flashnorm-pack-weights builds for
    constants (split over the cores from `parallel-min-bytes`, a sole
    post-scale in each panel's epilogue). Calls in the module pass the
    prepare function's results on as before; an argument some call passes
    from elsewhere, or that something else reads, keeps its layout (a
    remark says why). External callers pass the prepare function's results
    to `@f`, whatever their shape. Runs in flashnorm-cpu-pipeline before
    flashnorm-pack-weights.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::affine::AffineDialect",
    "::mlir::scf::SCFDialect"
  ];
  let options = [
    Option<"panel", "panel", "int64_t", /*default=*/"0",
           "Outputs per panel (default 0, by shape, as flashnorm-pack-weights)">,
    Option<"vectorBits", "vector-bits", "int64_t", /*default=*/"0",
           "Width of the vector registers the kernels are sized for: 512 "
           "(AVX-512), 256 (AVX2), 128 (default 0: this machine's)">,
    Option<"parallelMinBytes", "parallel-min-bytes", "int64_t",
           /*default=*/"1048576",
           "Weights of at least this many bytes are split over the cores "
           "(default 1 MiB)">,
    Option<"threads", "threads", "int64_t", /*default=*/"0",
           "Cores to split a large weight's panels over (default 0: this "
           "machine's hardware threads)">,
    Option<"activationBlockBytes", "activation-block-bytes", "int64_t",
           /*default=*/"::mlir::flashnorm::kActivationBlockBytes",
           "An activation of more bytes (f32 as the kernel reads it) is read "
           "in blocks of at most this many, every panel passing over one "
           "block while it is in cache (default 256 KiB, half an L2; 0: "
           "never)">,
  ];
}

def FreeBuffers : Pass<"flashnorm-free-buffers", "ModuleOp"> {
  let summary = "Free the buffers bufferization allocated after their last use";
  let description = [{
    One-shot bufferization allocates the program's intermediate buffers
    and frees none of them: a function called once per token leaks every
    activation it makes. This pass runs upstream's ownership-based buffer
    deallocation (with its simplification and lowering; the clones it adds
    for results become an alloc and a copy), so a function frees what it
    allocated and its caller owns what it returns. A module that already
    frees memory itself (any op with a free effect on a memref, such as
    `memref.dealloc`) manages its own buffers; it is left exactly as it is
    (upstream's analysis refuses such programs).
  }];
  let options = [];
}

#endif
