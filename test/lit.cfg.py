# -*- Python -*-
import os
import shutil
import subprocess

import lit.formats
import lit.util
from lit.llvm import llvm_config

config.name = "FLASHNORM"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.flashnorm_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.flashnorm_tools_dir, append_path=True)

lib = config.mlir_lib_dir
# The reference CPU lowering (a registered pipeline), for tests that execute
# code with mlir-runner; -O2 (for %async-run) lets LLVM lower the coroutines
# that async tasks become.
config.substitutions.append(("%lower-to-llvm", "--flashnorm-lower-to-llvm"))


def runner(flags, libs):
    paths = ",".join(os.path.join(lib, l) for l in libs)
    return "%s %s-e main -entry-point-result=void -shared-libs=%s" % (
        os.path.join(config.llvm_tools_dir, "mlir-runner"), flags, paths)


utils = ["libmlir_runner_utils.so", "libmlir_c_runner_utils.so"]
config.substitutions.append(("%run", runner("", utils)))
# The CPU pipeline's programs: async tasks (concurrent statistics) and
# OpenMP threads (projections split over the cores).
config.substitutions.append(
    ("%async-run",
     runner("-O2 ", utils + ["libmlir_async_runtime.so", "libomp.so"])))
config.substitutions.append(
    ("%plugin", os.path.join(config.flashnorm_lib_dir, "FlashNormPlugin.so"))
)
config.substitutions.append(
    ("%upstream-mlir-opt", os.path.join(config.llvm_tools_dir, "mlir-opt"))
)
config.substitutions.append(
    (
        "%compare",
        "%s %s"
        % (
            config.python_executable,
            os.path.join(config.test_source_root, "compare-outputs.py"),
        ),
    )
)
config.substitutions.append(("%flashnorm-obj-root", config.flashnorm_obj_root))
config.substitutions.append(
    ("%flashnorm-src-root", os.path.dirname(config.test_source_root)))
config.environment["MLIR_LIB_DIR"] = lib
config.substitutions.append(("%mlir-lib-dir", lib))
config.environment["FLASHNORM_LIB_DIR"] = config.flashnorm_lib_dir
config.substitutions.append(
    ("%check-model", os.path.join(config.test_source_root, "check-model.sh"))
)
config.substitutions.append(
    ("%check-gpu-kernels-on-cpu",
     os.path.join(config.test_source_root, "check-gpu-modes.sh") + " cpu")
)
config.substitutions.append(
    ("%check-gpu-run",
     os.path.join(config.test_source_root, "check-gpu-modes.sh") + " gpu")
)
config.substitutions.append(
    ("%check-gpu-model",
     os.path.join(config.test_source_root, "check-gpu-model.sh"))
)
llvm_config.add_tool_substitutions(
    ["flashnorm-opt", "flashnorm-rounding-test", "flashnorm-gen", "flashnorm-run",
     "flashnorm-fold-checkpoint"],
    [config.flashnorm_tools_dir],
)


# sanitizer: the project's code is built with -fsanitize (FLASHNORM_SANITIZE);
# its shadow memory does not fit the address-space limits some tests set.
if getattr(config, "flashnorm_sanitize", ""):
    config.available_features.add("sanitizer")

# GPU features. cuda-toolkit: ptxas is there, so cubins can be built and
# checked; cuda-runtime: runtime/ was built; gpu: a GPU is present, so code
# can run. Tests say which they need with REQUIRES.
def _cuda_root():
    for root in [getattr(config, "cuda_root", ""), "/usr/local/cuda"]:
        if root and os.path.exists(os.path.join(root, "bin", "ptxas")):
            return root
    return None


cuda_root = _cuda_root()
if cuda_root:
    config.available_features.add("cuda-toolkit")
    config.substitutions.append(("%cuda-root", cuda_root))
    # gpu-module-to-binary finds ptxas through the toolkit path.
    config.environment["CUDA_ROOT"] = cuda_root
else:
    lit_config.note("cubin tests skipped: no CUDA toolkit (ptxas) found")
if lit.util.pythonize_bool(getattr(config, "flashnorm_cuda_runtime", "OFF")):
    config.available_features.add("cuda-runtime")
    # Runs GPU pipeline output: the JIT loads the project's CUDA runtime.
    config.substitutions.append(
        ("%gpu-run", runner("", utils + [os.path.join(
            config.flashnorm_lib_dir, lib) for lib in [
                "libflashnorm_cuda_runtime.so", "libflashnorm_cublaslt.so"]])))


def _has_gpu():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        r = subprocess.run([smi, "-L"], capture_output=True, text=True,
                           timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return r.returncode == 0 and "GPU" in r.stdout


if _has_gpu():
    config.available_features.add("gpu")
else:
    lit_config.note("GPU execution tests skipped: no GPU (nvidia-smi -L)")
