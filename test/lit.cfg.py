# -*- Python -*-
import os

import lit.formats
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
# flashnorm ops, then upstream passes, down to the LLVM dialect for tests
# that execute code with mlir-runner (shared with scripts/demo.sh).
with open(os.path.join(config.test_source_root, "..", "scripts",
                       "lower-to-llvm.args")) as f:
    lower = " ".join("'%s'" % line.strip() for line in f if line.strip())
config.substitutions.append(("%lower-to-llvm", lower))
config.substitutions.append(
    (
        "%run",
        "%s -e main -entry-point-result=void -shared-libs=%s,%s"
        % (
            os.path.join(config.llvm_tools_dir, "mlir-runner"),
            os.path.join(lib, "libmlir_runner_utils.so"),
            os.path.join(lib, "libmlir_c_runner_utils.so"),
        ),
    )
)
# Code with async tasks: the async runtime, and -O2 so that LLVM lowers the
# coroutines the tasks become.
config.substitutions.append(
    (
        "%async-run",
        "%s -O2 -e main -entry-point-result=void -shared-libs=%s,%s,%s"
        % (
            os.path.join(config.llvm_tools_dir, "mlir-runner"),
            os.path.join(lib, "libmlir_runner_utils.so"),
            os.path.join(lib, "libmlir_c_runner_utils.so"),
            os.path.join(lib, "libmlir_async_runtime.so"),
        ),
    )
)
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
config.environment["MLIR_LIB_DIR"] = lib
config.substitutions.append(
    ("%check-model", os.path.join(config.test_source_root, "check-model.sh"))
)
llvm_config.add_tool_substitutions(
    ["flashnorm-opt", "flashnorm-rounding-test", "flashnorm-gen", "flashnorm-run"],
    [config.flashnorm_tools_dir],
)
