// Bad pipeline options are errors with a non-zero exit, not crashes.
// RUN: not flashnorm-opt %s --flashnorm-gpu-pipeline=defer-mode=bogus 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not flashnorm-opt %s --flashnorm-gpu-pipeline=format=elf 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not flashnorm-opt %s --flashnorm-gpu-pipeline=gemm=magic 2>&1 | FileCheck %s --check-prefix=GEMM
// RUN: not flashnorm-opt %s --flashnorm-gpu-streams-to-llvm=defer-mode=bogus 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not flashnorm-opt %s --flashnorm-cpu-pipeline=tile-sizes=1,2 2>&1 | FileCheck %s --check-prefix=TILES
// RUN: not flashnorm-opt %s --flashnorm-cpu-pipeline=threads=-1 2>&1 | FileCheck %s --check-prefix=CPU-THREADS
// RUN: not flashnorm-opt %s --flashnorm-cpu-pipeline=concurrent-min-bytes=-5 2>&1 | FileCheck %s --check-prefix=CPU-MIN
// RUN: not flashnorm-opt %s --flashnorm-cpu-to-buffers=vector-width=-16 2>&1 | FileCheck %s --check-prefix=CPU-WIDTH
// CPU-THREADS: flashnorm-cpu-pipeline: threads must be 0 (all cores) or positive
// CPU-THREADS-NOT: error
// CPU-MIN: flashnorm-cpu-pipeline: concurrent-min-bytes must not be negative
// CPU-WIDTH: flashnorm-cpu-pipeline: vector-width must not be negative
// RUN: not flashnorm-opt %s --flashnorm-cpu-pipeline=activation-block-bytes=-1 2>&1 | FileCheck %s --check-prefix=CPU-BLOCK
// CPU-BLOCK: flashnorm-cpu-pipeline: activation-block-bytes must not be negative
// RUN: not flashnorm-opt %s --flashnorm-cpu-pipeline=vector-bits=1024 2>&1 | FileCheck %s --check-prefix=CPU-BITS
// RUN: not flashnorm-opt %s --flashnorm-cpu-buffers-to-llvm=vector-bits=100 2>&1 | FileCheck %s --check-prefix=CPU-BITS
// RUN: not flashnorm-opt %s --flashnorm-pack-weights=vector-bits=-1 2>&1 | FileCheck %s --check-prefix=PACK-BITS
// RUN: not flashnorm-opt %s --flashnorm-pack-prepared-weights=vector-bits=64 2>&1 | FileCheck %s --check-prefix=PREPARED-BITS
// CPU-BITS: flashnorm-cpu-pipeline: vector-bits must be 0 (this machine's), 128, 256 or 512
// PACK-BITS: flashnorm-pack-weights: vector-bits must be 0 (this machine's), 128, 256 or 512, not -1
// PREPARED-BITS: vector-bits must be 0 (this machine's), 128, 256 or 512, not 64
// RUN: not flashnorm-opt %s --flashnorm-gpu-pipeline=threads=0 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not flashnorm-opt %s --flashnorm-gpu-pipeline=threads=100000 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not flashnorm-opt %s --flashnorm-gpu-pipeline=reduce-threads=-4 2>&1 | FileCheck %s --check-prefix=REDUCE
// RUN: not flashnorm-opt %s --flashnorm-gpu-to-streams=threads=-1 2>&1 | FileCheck %s --check-prefix=THREADS-NEG
// An unknown or empty chip: an error up front, not an LLVM abort in
// instruction selection or a crash in target verification.
// RUN: not flashnorm-opt %s --flashnorm-gpu-pipeline=chip=foo 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not flashnorm-opt %s --flashnorm-gpu-pipeline=chip= 2>&1 | FileCheck %s --check-prefix=NOCHIP
// Features the NVPTX backend does not know: an error, not its warning and
// PTX of another version than asked.
// RUN: not flashnorm-opt %s --flashnorm-gpu-pipeline=features=+ptx999 2>&1 | FileCheck %s --check-prefix=FEATURES
// RUN: not flashnorm-opt %s --flashnorm-gpu-pipeline=features=+ptx80,ptx80 2>&1 | FileCheck %s --check-prefix=NOSIGN
// RUN: flashnorm-opt %s --flashnorm-gpu-pipeline="chip=sm_90a format=isa" -o /dev/null
// Chips the backend knows with options they do not take: PTX older than
// the chip's (the backend's fatal error), tensor cores before sm_80 (an
// abort in instruction selection: mma.sync m16n8k16 needs sm_80). With
// what each needs, bf16 decode lowers: on tensor cores for sm_100, as
// SIMT kernels for sm_75.
// RUN: not flashnorm-opt %s --flashnorm-gpu-pipeline=chip=sm_100 2>&1 | FileCheck %s --check-prefix=PTX
// RUN: not flashnorm-opt %s --flashnorm-gpu-pipeline="chip=sm_90a features=+ptx78" 2>&1 | FileCheck %s --check-prefix=PTX-90A
// RUN: not flashnorm-opt %s --flashnorm-gpu-pipeline=chip=sm_75 2>&1 | FileCheck %s --check-prefix=SM75
// RUN: flashnorm-opt %S/../Integration/Inputs/bf16-decode-fused.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="chip=sm_100 features=+ptx86 format=isa" | FileCheck %s --check-prefix=PTX86
// RUN: flashnorm-opt %S/../Integration/Inputs/bf16-decode-fused.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="chip=sm_75 tensor-cores=false format=isa" | FileCheck %s --check-prefix=SIMT75
// The raise's tolerance: NaN, negative or 0 would refuse every norm
// silently, inf would raise a plain sum as one.
// RUN: not flashnorm-opt %s --flashnorm-raise=scale-tolerance=inf 2>&1 | FileCheck %s --check-prefix=TOL
// RUN: not flashnorm-opt %s --flashnorm-raise=scale-tolerance=nan 2>&1 | FileCheck %s --check-prefix=TOL
// RUN: not flashnorm-opt %s --flashnorm-raise=scale-tolerance=0 2>&1 | FileCheck %s --check-prefix=TOL
// RUN: not flashnorm-opt %s --flashnorm-raise=scale-tolerance=-1 2>&1 | FileCheck %s --check-prefix=TOL
// MODE: for the --defer-mode option: Cannot find option named 'bogus'!
// FORMAT: for the --format option: Cannot find option named 'elf'!
// GEMM: for the --gemm option: Cannot find option named 'magic'!
// THREADS: error: flashnorm-gpu-pipeline: threads must be between 1 and 1024
// REDUCE: error: flashnorm-gpu-pipeline: reduce-threads must be between 1 and 1024, not -4
// THREADS-NEG: error: flashnorm-gpu-pipeline: threads must be between 1 and 1024, not -1
// CHIP-NOT: not a recognized processor
// CHIP: error: flashnorm-gpu-pipeline: chip must be an NVIDIA target the NVPTX backend knows (sm_80, sm_90, sm_90a, ...), not 'foo'
// NOCHIP: error: flashnorm-gpu-pipeline: chip must be {{.*}}, not ''
// FEATURES-NOT: not a recognized feature
// FEATURES: error: flashnorm-gpu-pipeline: features must be NVPTX features, each +name or -name (+ptx80, +ptx85, ...), not '+ptx999'
// NOSIGN: error: flashnorm-gpu-pipeline: features must be {{.*}}, not 'ptx80'
// PTX-NOT: LLVM ERROR
// PTX: error: flashnorm-gpu-pipeline: features=+ptx80 ask for PTX 8.0, older than sm_100 takes (PTX 8.6): give features=+ptx86 or newer
// PTX-90A: error: flashnorm-gpu-pipeline: features=+ptx78 ask for PTX 7.8, older than sm_90a takes (PTX 8.0): give features=+ptx80 or newer
// SM75-NOT: LLVM ERROR
// SM75: error: flashnorm-gpu-pipeline: tensor-cores=true needs sm_80 or newer (mma.sync m16n8k16, cp.async), not sm_75: give tensor-cores=false for it
// PTX86: .version 8.6
// PTX86: .target sm_100
// PTX86: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// SIMT75: .version 8.0
// SIMT75: .target sm_75
// SIMT75-NOT: mma.sync
// TOL: error: flashnorm-raise: scale-tolerance must be in (0, 1.000000e-02]
// TILES: error: flashnorm-cpu-pipeline: tile-sizes needs 3 values (m, n, k), got 2
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
