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
config.substitutions.append(
    ("%async-run", runner("-O2 ", utils + ["libmlir_async_runtime.so"])))
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
