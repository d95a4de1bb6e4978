//===- flashnorm-run.cpp - JIT runner and differential checker
//-------------===//
//
// Runs one function of a module on the CPU (MLIR's ExecutionEngine, through
// the reference lowering flashnorm-lower-to-llvm) with seeded random inputs
// made from its signature, and prints checksums or values of its outputs.
// With --compare it runs the function before and after a pipeline (or
// against a second module) on the same inputs and reports, per output, the
// largest absolute and relative error; it exits 1 past --rtol/--atol.
//
//   flashnorm-run model.mlir -e forward --pipeline='builtin.module(flashnorm)'
//   --compare
//
//===----------------------------------------------------------------------===//

#include "flashnorm/InitAll.h"
#include "flashnorm/Pipelines/Pipelines.h"
#include "flashnorm/Utils/WeightFolder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>
#include <random>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory runCategory("flashnorm-run options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input.mlir>"),
                                      cl::init("-"), cl::cat(runCategory));
static cl::opt<std::string> entry("e", cl::desc("Function to call"),
                                  cl::init("forward"), cl::cat(runCategory));
static cl::opt<std::string>
    pipeline("pipeline",
             cl::desc("Pass pipeline applied before running, e.g. "
                      "'builtin.module(flashnorm)' (default: none)"),
             cl::init(""), cl::cat(runCategory));
static cl::opt<bool>
    compare("compare",
            cl::desc("Also run the module without --pipeline (or the module "
                     "of --compare-with) on the same inputs and compare"),
            cl::init(false), cl::cat(runCategory));
static cl::opt<std::string>
    compareWith("compare-with",
                cl::desc("With --compare: the reference module (default: the "
                         "input without --pipeline)"),
                cl::init(""), cl::cat(runCategory));
static cl::opt<double> relTol("rtol", cl::desc("Relative tolerance (1e-4)"),
                              cl::init(1e-4), cl::cat(runCategory));
static cl::opt<double> absTol("atol", cl::desc("Absolute tolerance (1e-5)"),
                              cl::init(1e-5), cl::cat(runCategory));
static cl::opt<unsigned> seed("seed", cl::desc("Seed of the random inputs"),
                              cl::init(1), cl::cat(runCategory));
static cl::opt<bool> concurrent(
    "concurrent",
    cl::desc("Lower with flashnorm-cpu-pipeline: deferred norms' statistics "
             "and projections as async tasks (default: the serial reference "
             "lowering)"),
    cl::init(false), cl::cat(runCategory));
static cl::opt<double>
    inputRange("input-range",
               cl::desc("Inputs are uniform in [-R, R] (default 1)"),
               cl::init(1.0), cl::cat(runCategory));
static cl::list<std::string> inputFiles(
    "inputs",
    cl::desc("Files holding the arguments instead of random values, one per "
             "argument in order (comma separated): raw little-endian elements "
             "of the argument's type, row-major"),
    cl::CommaSeparated, cl::cat(runCategory));
static cl::list<std::string>
    sharedLibs("shared-libs",
               cl::desc("Libraries the function calls into (comma separated)"),
               cl::CommaSeparated, cl::cat(runCategory));
enum class PrintMode { Checksum, Values, None };
static cl::opt<PrintMode> printMode(
    "print", cl::desc("What to print of each output"),
    cl::init(PrintMode::Checksum),
    cl::values(clEnumValN(PrintMode::Checksum, "checksum",
                          "shape, sum and sum of |x| (default)"),
               clEnumValN(PrintMode::Values, "values", "every element"),
               clEnumValN(PrintMode::None, "none", "nothing")),
    cl::cat(runCategory));

namespace {
/// Engines stay alive until the process exits: destroying one that loaded
/// the async runtime tears the runtime down under the next engine.
std::vector<std::unique_ptr<ExecutionEngine>> &liveEngines() {
  static std::vector<std::unique_ptr<ExecutionEngine>> engines;
  return engines;
}

/// Exits without running the engines' teardown (see liveEngines).
[[noreturn]] void exitWith(int code) {
  llvm::outs().flush();
  llvm::errs().flush();
  std::_Exit(code);
}

/// A float tensor on the host: shape, element type, values in f64.
struct HostTensor {
  SmallVector<int64_t> shape;
  flashnorm::FloatKind kind;
  std::vector<double> values;
};

std::optional<flashnorm::FloatKind> floatKindOf(Type t) {
  return flashnorm::getFloatKind(t);
}

/// Why `type` cannot be an argument or result, or an empty string.
std::string unsupported(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return "it is not a ranked tensor";
  if (!tensor.hasStaticShape())
    return "its shape is not static";
  if (!floatKindOf(tensor.getElementType()))
    return "its element type is not f16, bf16, f32 or f64";
  return "";
}

size_t byteWidth(flashnorm::FloatKind kind) {
  switch (kind) {
  case flashnorm::FloatKind::F16:
  case flashnorm::FloatKind::BF16:
    return 2;
  case flashnorm::FloatKind::F32:
    return 4;
  case flashnorm::FloatKind::F64:
    return 8;
  }
  llvm_unreachable("unknown float kind");
}

void store(flashnorm::FloatKind kind, char *dst, double v) {
  switch (kind) {
  case flashnorm::FloatKind::F16: {
    uint16_t h = flashnorm::encodeHalf(v);
    std::memcpy(dst, &h, 2);
    return;
  }
  case flashnorm::FloatKind::BF16: {
    uint16_t h = flashnorm::encodeBFloat(v);
    std::memcpy(dst, &h, 2);
    return;
  }
  case flashnorm::FloatKind::F32: {
    float f = static_cast<float>(v);
    std::memcpy(dst, &f, 4);
    return;
  }
  case flashnorm::FloatKind::F64:
    std::memcpy(dst, &v, 8);
    return;
  }
}

double load(flashnorm::FloatKind kind, const char *src) {
  uint16_t h;
  float f;
  double d;
  switch (kind) {
  case flashnorm::FloatKind::F16:
    std::memcpy(&h, src, 2);
    return flashnorm::decodeHalf(h);
  case flashnorm::FloatKind::BF16:
    std::memcpy(&h, src, 2);
    return flashnorm::decodeBFloat(h);
  case flashnorm::FloatKind::F32:
    std::memcpy(&f, src, 4);
    return f;
  case flashnorm::FloatKind::F64:
    std::memcpy(&d, src, 8);
    return d;
  }
  llvm_unreachable("unknown float kind");
}

/// The arguments read from --inputs files, or an error.
FailureOr<SmallVector<HostTensor>> readInputs(FunctionType type) {
  if (inputFiles.size() != type.getNumInputs()) {
    llvm::errs() << "error: --inputs names " << inputFiles.size()
                 << " files but @" << entry << " takes " << type.getNumInputs()
                 << " arguments\n";
    return failure();
  }
  SmallVector<HostTensor> inputs;
  for (auto [file, t] : llvm::zip(inputFiles, type.getInputs())) {
    auto tensor = cast<RankedTensorType>(t);
    HostTensor h{llvm::to_vector(tensor.getShape()),
                 *floatKindOf(tensor.getElementType()),
                 {}};
    auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/false);
    size_t width = byteWidth(h.kind);
    size_t expected = width * tensor.getNumElements();
    if (!buffer) {
      llvm::errs() << "error: cannot read " << file << "\n";
      return failure();
    }
    if ((*buffer)->getBufferSize() != expected) {
      llvm::errs() << "error: " << file << " holds "
                   << (*buffer)->getBufferSize() << " bytes, expected "
                   << expected << " for " << t << "\n";
      return failure();
    }
    const char *data = (*buffer)->getBufferStart();
    h.values.resize(tensor.getNumElements());
    for (size_t i = 0; i < h.values.size(); ++i)
      h.values[i] = load(h.kind, data + i * width);
    inputs.push_back(std::move(h));
  }
  return inputs;
}

/// Seeded inputs for every argument: uniform in [-R, R], rounded to the
/// argument's element type (so both runs see the same bits).
SmallVector<HostTensor> makeInputs(FunctionType type) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-inputRange, inputRange);
  SmallVector<HostTensor> inputs;
  for (Type t : type.getInputs()) {
    auto tensor = cast<RankedTensorType>(t);
    HostTensor h{llvm::to_vector(tensor.getShape()),
                 *floatKindOf(tensor.getElementType()),
                 {}};
    h.values.resize(tensor.getNumElements());
    char buf[8];
    for (double &v : h.values) {
      store(h.kind, buf, dist(rng));
      v = load(h.kind, buf);
    }
    inputs.push_back(std::move(h));
  }
  return inputs;
}

/// Lowers `module` (after `passes`, if any) and calls the entry function.
/// Arguments and results follow the memref calling convention: each memref
/// is (allocated, aligned, offset, sizes..., strides...).
FailureOr<SmallVector<HostTensor>> run(ModuleOp module, StringRef passes,
                                       ArrayRef<HostTensor> inputs,
                                       FunctionType type) {
  // Only the entry function and what it calls are compiled: a @main that
  // prints through runtime functions should not need them here.
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn.getName() != entry)
      fn.setPrivate();
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  if (!passes.empty()) {
    // `builtin.module(...)`, or a bare pass list anchored on the module.
    std::string text = passes.str();
    if (!StringRef(text).starts_with("builtin.module("))
      text = "builtin.module(" + text + ")";
    FailureOr<OpPassManager> user = parsePassPipeline(text, errorStream);
    if (failed(user)) {
      llvm::errs() << "error: cannot parse --pipeline: " << errors << "\n";
      return failure();
    }
    PassManager userPm(module.getContext());
    static_cast<OpPassManager &>(userPm) = *user;
    if (failed(userPm.run(module)))
      return failure(); // The diagnostics are already printed.
  }
  PassManager pm(module.getContext());
  pm.addPass(createSymbolDCEPass());
  flashnorm::CpuPipelineOptions cpu;
  cpu.concurrent = concurrent.getValue();
  if (failed(flashnorm::buildCpuPipeline(pm, cpu, errorStream))) {
    llvm::errs() << "error: " << errors << "\n";
    return failure();
  }
  if (failed(pm.run(module)))
    return failure(); // The diagnostics are already printed.

  SmallVector<StringRef> libs;
  for (const std::string &lib : sharedLibs)
    libs.push_back(lib);
  if (concurrent) // Async tasks call into MLIR's async runtime.
    libs.push_back(FLASHNORM_MLIR_LIB_DIR "/libmlir_async_runtime.so");
  ExecutionEngineOptions options;
  options.sharedLibPaths = libs;
  auto transformer = makeOptimizingTransformer(2, 0, nullptr);
  options.transformer = transformer;
  auto engine = ExecutionEngine::create(module, options);
  if (!engine) {
    llvm::errs() << "error: cannot JIT the module: "
                 << llvm::toString(engine.takeError()) << "\n";
    return failure();
  }

  // Inputs: one aligned buffer each, passed as expanded memref descriptors.
  SmallVector<std::vector<char>> buffers;
  SmallVector<std::vector<int64_t>> scalars; // offset, sizes, strides
  SmallVector<void *> pointers;              // allocated and aligned
  SmallVector<void *> args;
  pointers.reserve(2 * inputs.size());
  for (const HostTensor &in : inputs) {
    size_t width = byteWidth(in.kind);
    buffers.emplace_back(in.values.size() * width + 64);
    char *data = buffers.back().data();
    char *aligned = data + (64 - reinterpret_cast<uintptr_t>(data) % 64) % 64;
    for (size_t i = 0; i < in.values.size(); ++i)
      store(in.kind, aligned + i * width, in.values[i]);
    std::vector<int64_t> desc{0};
    desc.insert(desc.end(), in.shape.begin(), in.shape.end());
    SmallVector<int64_t> strides(in.shape.size(), 1);
    for (int64_t d = static_cast<int64_t>(in.shape.size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * in.shape[d + 1];
    desc.insert(desc.end(), strides.begin(), strides.end());
    scalars.push_back(std::move(desc));
    pointers.push_back(aligned);
    pointers.push_back(aligned);
  }
  for (auto [i, in] : llvm::enumerate(inputs)) {
    args.push_back(&pointers[2 * i]);
    args.push_back(&pointers[2 * i + 1]);
    for (int64_t &s : scalars[i])
      args.push_back(&s);
  }
  // Results: the function returns its memrefs' descriptors in one struct of
  // 8-byte fields.
  size_t resultWords = 0;
  for (Type t : type.getResults())
    resultWords += 3 + 2 * cast<RankedTensorType>(t).getRank();
  std::vector<int64_t> resultStorage(std::max<size_t>(resultWords, 1));
  if (!type.getResults().empty())
    args.push_back(resultStorage.data());
  if (llvm::Error err = (*engine)->invokePacked(entry, args)) {
    llvm::errs() << "error: calling @" << entry
                 << " failed: " << llvm::toString(std::move(err)) << "\n";
    return failure();
  }

  SmallVector<HostTensor> outputs;
  size_t word = 0;
  for (Type t : type.getResults()) {
    auto tensor = cast<RankedTensorType>(t);
    HostTensor out{llvm::to_vector(tensor.getShape()),
                   *floatKindOf(tensor.getElementType()),
                   {}};
    int64_t rank = tensor.getRank();
    auto *aligned = reinterpret_cast<char *>(resultStorage[word + 1]);
    int64_t offset = resultStorage[word + 2];
    ArrayRef<int64_t> strides(&resultStorage[word + 3 + rank], rank);
    size_t width = byteWidth(out.kind);
    out.values.resize(tensor.getNumElements());
    SmallVector<int64_t> index(rank, 0);
    for (size_t flat = 0; flat < out.values.size(); ++flat) {
      int64_t pos = offset;
      for (int64_t d = 0; d < rank; ++d)
        pos += index[d] * strides[d];
      out.values[flat] = load(out.kind, aligned + pos * width);
      for (int64_t d = rank - 1; d >= 0; --d) { // Row-major increment.
        if (++index[d] < out.shape[d])
          break;
        index[d] = 0;
      }
    }
    // A result the function allocated (malloc) is freed; one that aliases an
    // argument (bufferization may write an argument in place) is ours.
    auto *allocated = reinterpret_cast<char *>(resultStorage[word]);
    bool isArgument = llvm::any_of(buffers, [&](const std::vector<char> &b) {
      return allocated >= b.data() && allocated < b.data() + b.size();
    });
    if (!isArgument)
      std::free(allocated);
    word += 3 + 2 * rank;
    outputs.push_back(std::move(out));
  }
  liveEngines().push_back(std::move(*engine));
  return outputs;
}

std::string shapeString(const HostTensor &t) {
  std::string s;
  for (int64_t d : t.shape)
    s += std::to_string(d) + "x";
  const char *names[] = {"f16", "bf16", "f32", "f64"};
  return s + names[static_cast<int>(t.kind)];
}

void printOutputs(StringRef label, ArrayRef<HostTensor> outputs) {
  if (printMode == PrintMode::None)
    return;
  for (auto [i, out] : llvm::enumerate(outputs)) {
    double sum = 0, abs = 0;
    for (double v : out.values) {
      sum += v;
      abs += std::fabs(v);
    }
    llvm::outs() << label << "output #" << i << " " << shapeString(out)
                 << llvm::format(": sum %.6g, sum|x| %.6g", sum, abs);
    if (printMode == PrintMode::Values) {
      llvm::outs() << ", values";
      for (double v : out.values)
        llvm::outs() << llvm::format(" %.6g", v);
    }
    llvm::outs() << "\n";
  }
}

/// Per output: the largest errors and whether all are within tolerance.
bool compareOutputs(ArrayRef<HostTensor> expected,
                    ArrayRef<HostTensor> actual) {
  bool ok = true;
  for (auto [i, pair] : llvm::enumerate(llvm::zip(expected, actual))) {
    auto [e, a] = pair;
    double maxAbs = 0, maxRel = 0;
    int64_t bad = 0, worst = -1;
    double worstExcess = 0;
    for (size_t j = 0; j < e.values.size(); ++j) {
      double x = e.values[j], y = a.values[j];
      double err = std::fabs(x - y);
      bool nanMismatch = std::isnan(x) != std::isnan(y);
      if (std::isnan(err) && !nanMismatch)
        err = 0; // Both NaN.
      maxAbs = std::max(maxAbs, err);
      if (x != 0)
        maxRel = std::max(maxRel, err / std::fabs(x));
      double excess = err - (absTol + relTol * std::fabs(x));
      if (excess > 0 || nanMismatch) {
        ++bad;
        if (worst < 0 || excess > worstExcess) {
          worst = j;
          worstExcess = excess;
        }
      }
    }
    llvm::outs() << "output #" << i << " " << shapeString(e)
                 << llvm::format(": max abs error %.3g, max rel error %.3g",
                                 maxAbs, maxRel);
    if (bad) {
      ok = false;
      llvm::outs() << llvm::format(
          ", %lld of %zu past rtol %g atol %g (worst at %lld: %.6g vs %.6g)",
          static_cast<long long>(bad), e.values.size(), relTol.getValue(),
          absTol.getValue(), static_cast<long long>(worst), e.values[worst],
          a.values[worst]);
    }
    llvm::outs() << "\n";
  }
  llvm::outs() << (ok ? "MATCH" : "MISMATCH") << "\n";
  return ok;
}

/// The entry function of `module` and its type, or an error.
FailureOr<FunctionType> checkEntry(ModuleOp module, StringRef where) {
  auto fn = module.lookupSymbol<func::FuncOp>(entry);
  if (!fn || fn.isExternal()) {
    llvm::errs() << "error: " << where << " has no function @" << entry
                 << " with a body\n";
    return failure();
  }
  FunctionType type = fn.getFunctionType();
  for (auto [kind, types] : {std::make_pair("argument", type.getInputs()),
                             std::make_pair("result", type.getResults())})
    for (auto [i, t] : llvm::enumerate(types))
      if (std::string why = unsupported(t); !why.empty()) {
        llvm::errs() << "error: @" << entry << " " << kind << " #" << i
                     << " has type " << t << ": " << why
                     << " (flashnorm-run feeds static float tensors)\n";
        return failure();
      }
  return type;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  registerAllPasses();
  flashnorm::registerAllPasses();
  cl::HideUnrelatedOptions(runCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "flashnorm-run: JIT-runs a function and compares it across a "
      "pipeline\n");

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  flashnorm::registerAllDialects(registry);
  MLIRContext context(registry);

  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(inputFile, &context);
  if (!module)
    return 1;
  FailureOr<FunctionType> type = checkEntry(*module, inputFile);
  if (failed(type))
    return 1;
  SmallVector<HostTensor> inputs;
  if (inputFiles.empty()) {
    inputs = makeInputs(*type);
  } else {
    FailureOr<SmallVector<HostTensor>> read = readInputs(*type);
    if (failed(read))
      return 1;
    inputs = std::move(*read);
  }

  OwningOpRef<ModuleOp> reference;
  if (compare) {
    reference = compareWith.empty()
                    ? OwningOpRef<ModuleOp>(module->clone())
                    : parseSourceFile<ModuleOp>(compareWith, &context);
    if (!reference)
      return 1;
    FailureOr<FunctionType> refType = checkEntry(*reference, compareWith);
    if (failed(refType))
      return 1;
    if (*refType != *type) {
      llvm::errs() << "error: @" << entry << " has type " << *refType
                   << " in the reference but " << *type << " in the input\n";
      return 1;
    }
  }

  FailureOr<SmallVector<HostTensor>> outputs =
      run(*module, pipeline, inputs, *type);
  if (failed(outputs))
    exitWith(1);
  if (!compare) {
    printOutputs("", *outputs);
    exitWith(0);
  }
  // The reference runs without --pipeline (it is the "before" side).
  FailureOr<SmallVector<HostTensor>> expected =
      run(*reference, "", inputs, *type);
  if (failed(expected))
    exitWith(1);
  printOutputs("reference ", *expected);
  printOutputs("", *outputs);
  exitWith(compareOutputs(*expected, *outputs) ? 0 : 1);
}
