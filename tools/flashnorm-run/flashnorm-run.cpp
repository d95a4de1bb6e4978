//===- flashnorm-run.cpp - JIT runner and differential checker ------------===//
//
// Runs one function of a module on the CPU (MLIR's ExecutionEngine, through
// flashnorm-cpu-pipeline) with seeded random inputs made from its signature
// (float, integer and index tensors and scalars), and prints checksums or
// values of its outputs. With --compare it runs the
// function before and after a pipeline (or against a second module) on the
// same inputs and reports, per output, the largest absolute and relative
// error; it exits 1 past --rtol/--atol. With --prepare it runs the rewritten
// @f_flashnorm_prepare on the inputs, then @f on its folded weights, against
// the original @f: the check an integrator runs on a real model.
//
//   flashnorm-run model.mlir -e forward --pipeline=flashnorm --compare
//   flashnorm-run decode.mlir -e forward --prepare --arg 2=17
//   flashnorm-run m.fn.mlir --params m.fn.safetensors --compare \
//       --compare-with m.mlir --compare-params m.safetensors
//
// Weights outside the IR (`ml_program.global` with `#ml_program.extern`)
// come from safetensors checkpoints (--params), mapped, not copied: each
// extern global is bound by name to its tensor's bytes in the JIT.
//
// Host values stay in their own element type (a bf16 model's weights take
// two bytes each here too).
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/InitAll.h"
#include "flashnorm/Pipelines/Pipelines.h"
#include "flashnorm/Transforms/Passes.h"
#include "flashnorm/Utils/Safetensors.h"
#include "flashnorm/Utils/WeightFolder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
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
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <unistd.h>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory runCategory("flashnorm-run options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input.mlir>"),
                                      cl::init("-"), cl::cat(runCategory));
static cl::opt<std::string> entry("e", cl::desc("Function to call"),
                                  cl::init("forward"), cl::cat(runCategory));
static cl::opt<std::string> pipeline(
    "pipeline",
    cl::desc("Pass pipeline applied before running: 'builtin.module(...)' or "
             "a list of pass names, function passes nested implicitly, e.g. "
             "'flashnorm' or 'flashnorm-raise,flashnorm-fold-gains' "
             "(default: none; with --prepare: flashnorm{prepare-function=1})"),
    cl::init(""), cl::cat(runCategory));
static cl::opt<bool> prepare(
    "prepare",
    cl::desc("Run @<e>_flashnorm_prepare of the rewritten module on the "
             "inputs, then @<e> with the weights it returns, and compare "
             "with the original @<e> on the original inputs"),
    cl::init(false), cl::cat(runCategory));
static cl::list<std::string> argValues(
    "arg",
    cl::desc("N=VALUE: argument N is VALUE (a scalar, or every element of a "
             "tensor); repeatable"),
    cl::cat(runCategory));
static cl::opt<int64_t>
    intMax("int-max",
           cl::desc("Integer and index inputs are uniform in [0, N] "
                    "(default 0: always a valid token id or position)"),
           cl::init(0), cl::cat(runCategory));
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
static cl::opt<bool> packWeights(
    "pack-weights",
    cl::desc("Constant and prepared weights in the CPU kernel's panels "
             "(flashnorm-cpu-pipeline's pack-weights; false: they stay in "
             "their stored layout and run on the kernels a checkpoint's "
             "weights run on; default: true)"),
    cl::init(true), cl::cat(runCategory));
static cl::opt<bool> concurrent(
    "concurrent",
    cl::desc("Run every deferred norm's statistic and projection as async "
             "tasks (flashnorm-cpu-pipeline with concurrent-min-bytes=0: the "
             "cost rule off, so that tests see the schedule; default: "
             "concurrent=false)"),
    cl::init(false), cl::cat(runCategory));
static cl::opt<double>
    inputRange("input-range",
               cl::desc("Inputs are uniform in [-R, R] (default 1)"),
               cl::init(1.0), cl::cat(runCategory));
static cl::list<std::string> inputFiles(
    "inputs",
    cl::desc("Files holding the arguments instead of random values, one per "
             "argument in order (comma separated; an empty name keeps the "
             "random value): raw little-endian elements of the argument's "
             "type, row-major (index: 8 bytes)"),
    cl::CommaSeparated, cl::cat(runCategory));
static cl::list<std::string>
    paramFiles("params",
               cl::desc("Safetensors checkpoints (comma separated shards) "
                        "holding the module's extern ml_program globals, by "
                        "name"),
               cl::CommaSeparated, cl::cat(runCategory));
static cl::list<std::string> compareParamFiles(
    "compare-params",
    cl::desc("With --compare: the checkpoints of the reference module "
             "(default: --params)"),
    cl::CommaSeparated, cl::cat(runCategory));
static cl::list<std::string> sharedLibs(
    "shared-libs",
    cl::desc("More libraries the function calls into (comma separated; "
             "MLIR's runner utilities are always loaded)"),
    cl::CommaSeparated, cl::cat(runCategory));
enum class PrintMode { Checksum, Values, None };
static cl::opt<unsigned> timeRuns(
    "time",
    cl::desc("Also call the function N more times and print the median "
             "wall time of a call (the first, compiling, call excluded; the "
             "arguments are copied in once; with --prepare, on the prepared "
             "weights)"),
    cl::init(0), cl::cat(runCategory));
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

/// Element types a host value can hold.
enum class Kind { F16, BF16, F32, F64, I8, I16, I32, I64, Index };

bool isFloatKind(Kind k) { return k <= Kind::F64; }

std::optional<Kind> kindOf(Type t) {
  if (std::optional<flashnorm::FloatKind> f = flashnorm::getFloatKind(t))
    return static_cast<Kind>(*f); // Same order: F16, BF16, F32, F64.
  if (t.isIndex())
    return Kind::Index;
  if (auto i = dyn_cast<IntegerType>(t)) {
    switch (i.getWidth()) {
    case 8:
      return Kind::I8;
    case 16:
      return Kind::I16;
    case 32:
      return Kind::I32;
    case 64:
      return Kind::I64;
    }
  }
  return std::nullopt;
}

size_t byteWidth(Kind kind) {
  switch (kind) {
  case Kind::I8:
    return 1;
  case Kind::F16:
  case Kind::BF16:
  case Kind::I16:
    return 2;
  case Kind::F32:
  case Kind::I32:
    return 4;
  case Kind::F64:
  case Kind::I64:
  case Kind::Index:
    return 8;
  }
  llvm_unreachable("unknown kind");
}

const char *kindName(Kind kind) {
  const char *names[] = {"f16", "bf16", "f32", "f64",  "i8",
                         "i16", "i32",  "i64", "index"};
  return names[static_cast<int>(kind)];
}

template <typename T> T readAs(const char *src) {
  T v;
  std::memcpy(&v, src, sizeof(T));
  return v;
}
template <typename T> void writeAs(char *dst, T v) {
  std::memcpy(dst, &v, sizeof(T));
}

/// Writes `v` rounded (floats: to nearest even; integers: truncated) to the
/// element type.
void store(Kind kind, char *dst, double v) {
  switch (kind) {
  case Kind::F16:
    return writeAs(dst, flashnorm::encodeHalf(v));
  case Kind::BF16:
    return writeAs(dst, flashnorm::encodeBFloat(v));
  case Kind::F32:
    return writeAs(dst, static_cast<float>(v));
  case Kind::F64:
    return writeAs(dst, v);
  case Kind::I8:
    return writeAs(dst, static_cast<int8_t>(v));
  case Kind::I16:
    return writeAs(dst, static_cast<int16_t>(v));
  case Kind::I32:
    return writeAs(dst, static_cast<int32_t>(v));
  case Kind::I64:
  case Kind::Index:
    return writeAs(dst, static_cast<int64_t>(v));
  }
}

double load(Kind kind, const char *src) {
  switch (kind) {
  case Kind::F16:
    return flashnorm::decodeHalf(readAs<uint16_t>(src));
  case Kind::BF16:
    return flashnorm::decodeBFloat(readAs<uint16_t>(src));
  case Kind::F32:
    return readAs<float>(src);
  case Kind::F64:
    return readAs<double>(src);
  case Kind::I8:
    return readAs<int8_t>(src);
  case Kind::I16:
    return readAs<int16_t>(src);
  case Kind::I32:
    return readAs<int32_t>(src);
  case Kind::I64:
  case Kind::Index:
    return static_cast<double>(readAs<int64_t>(src));
  }
  llvm_unreachable("unknown kind");
}

/// An argument or result on the host, in its own element type: a tensor
/// (row-major) or a scalar (no shape).
struct HostValue {
  bool scalar = false;
  SmallVector<int64_t> shape;
  Kind kind = Kind::F32;
  std::vector<char> bytes;

  size_t size() const { return bytes.size() / byteWidth(kind); }
  double get(size_t i) const { return load(kind, &bytes[i * byteWidth(kind)]); }
  void set(size_t i, double v) { store(kind, &bytes[i * byteWidth(kind)], v); }

  static HostValue of(Type t) {
    HostValue h;
    auto tensor = dyn_cast<RankedTensorType>(t);
    h.scalar = !tensor;
    h.kind = *kindOf(tensor ? tensor.getElementType() : t);
    if (tensor)
      h.shape = llvm::to_vector(tensor.getShape());
    h.bytes.resize((tensor ? tensor.getNumElements() : 1) * byteWidth(h.kind));
    return h;
  }
};

/// The bytes of memory this machine has.
int64_t physicalMemory() {
  return int64_t(sysconf(_SC_PHYS_PAGES)) * int64_t(sysconf(_SC_PAGESIZE));
}

/// Why `type` cannot be an argument or result, or an empty string.
std::string unsupported(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor && !type.isIntOrIndexOrFloat())
    return "it is neither a ranked tensor nor a scalar";
  if (tensor && !tensor.hasStaticShape())
    return "its shape is not static";
  std::optional<Kind> kind = kindOf(tensor ? tensor.getElementType() : type);
  if (!kind)
    return "its element type is not f16, bf16, f32, f64, i8, i16, i32, i64 "
           "or index";
  // It is made in host memory (and the reference's too).
  int64_t bytes = byteWidth(*kind);
  if (tensor)
    for (int64_t size : tensor.getShape())
      if (llvm::MulOverflow(bytes, size, bytes) || bytes > physicalMemory())
        return "its bytes exceed this machine's memory";
  return "";
}

/// Parses the --arg list into argument number -> value.
FailureOr<std::map<unsigned, double>> parseArgValues(unsigned numArgs) {
  std::map<unsigned, double> values;
  for (StringRef spec : argValues) {
    auto [index, value] = spec.split('=');
    unsigned n;
    double v;
    if (index.trim().getAsInteger(10, n) || value.trim().getAsDouble(v)) {
      llvm::errs() << "error: --arg " << spec
                   << ": expected N=VALUE (e.g. --arg 2=17)\n";
      return failure();
    }
    if (n >= numArgs) {
      llvm::errs() << "error: --arg " << spec << ": @" << entry << " takes "
                   << numArgs << " arguments\n";
      return failure();
    }
    values[n] = v;
  }
  return values;
}

/// The arguments: seeded random values (floats uniform in [-R, R] rounded
/// to their type, integers uniform in [0, --int-max]), replaced by --inputs
/// files and --arg values where given.
FailureOr<SmallVector<HostValue>> makeInputs(FunctionType type) {
  FailureOr<std::map<unsigned, double>> fixed =
      parseArgValues(type.getNumInputs());
  if (failed(fixed))
    return failure();
  if (!inputFiles.empty() && inputFiles.size() != type.getNumInputs()) {
    llvm::errs() << "error: --inputs names " << inputFiles.size()
                 << " files but @" << entry << " takes " << type.getNumInputs()
                 << " arguments\n";
    return failure();
  }
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> real(-inputRange, inputRange);
  std::uniform_int_distribution<int64_t> integer(0, intMax);
  SmallVector<HostValue> inputs;
  for (auto [i, t] : llvm::enumerate(type.getInputs())) {
    HostValue h = HostValue::of(t);
    for (size_t j = 0; j < h.size(); ++j)
      h.set(j, isFloatKind(h.kind) ? real(rng)
                                   : static_cast<double>(integer(rng)));
    if (!inputFiles.empty() && !inputFiles[i].empty()) {
      const std::string &file = inputFiles[i];
      auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/false);
      if (!buffer) {
        llvm::errs() << "error: cannot read " << file << "\n";
        return failure();
      }
      if ((*buffer)->getBufferSize() != h.bytes.size()) {
        llvm::errs() << "error: " << file << " holds "
                     << (*buffer)->getBufferSize() << " bytes, expected "
                     << h.bytes.size() << " for " << t << "\n";
        return failure();
      }
      std::memcpy(h.bytes.data(), (*buffer)->getBufferStart(), h.bytes.size());
    }
    if (auto it = fixed->find(i); it != fixed->end())
      for (size_t j = 0; j < h.size(); ++j)
        h.set(j, it->second);
    inputs.push_back(std::move(h));
  }
  return inputs;
}

/// Whether the options hold values that mean something, saying why not:
/// numbers in their ranges, named files there.
LogicalResult checkOptions() {
  auto fail = [](const Twine &msg) {
    llvm::errs() << "error: " << msg << "\n";
    return failure();
  };
  if (intMax < 0)
    return fail("--int-max must be 0 or more, not " + Twine(intMax));
  if (!(inputRange > 0) || !std::isfinite(inputRange)) {
    std::string range;
    llvm::raw_string_ostream(range)
        << llvm::format("%g", inputRange.getValue());
    return fail("--input-range must be a positive finite number, not " + range);
  }
  if (!(relTol >= 0) || !(absTol >= 0))
    return fail("--rtol and --atol must be 0 or more");
  for (const auto *files : {&paramFiles, &compareParamFiles, &sharedLibs})
    for (const std::string &file : *files)
      if (!llvm::sys::fs::exists(file))
        return fail("'" + file + "' does not exist");
  // The JIT would say it cannot load one and run without it.
  for (const std::string &lib : sharedLibs) {
    std::string why;
    if (!llvm::sys::DynamicLibrary::getPermanentLibrary(lib.c_str(), &why)
             .isValid())
      return fail("cannot load --shared-libs '" + lib + "': " + why);
  }
  return success();
}

/// --pipeline as a pass manager on builtin.module: 'builtin.module(...)' as
/// written, or a bare list whose function passes are nested. Parsed
/// before any input is made, so a typo costs nothing.
FailureOr<OpPassManager> parseUserPipeline(StringRef text) {
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  text = text.trim();
  if (text.starts_with("builtin.module(")) {
    FailureOr<OpPassManager> pm = parsePassPipeline(text, errorStream);
    if (failed(pm))
      llvm::errs() << "error: cannot parse --pipeline: " << errors << "\n";
    return pm;
  }
  // Each top-level element runs on the module if it can, else on every
  // function (a bare function pass). (An element left open would never
  // end: it would be dropped and nothing run.)
  int open = 0;
  for (char c : text)
    if ((open += (c == '(' || c == '{') - (c == ')' || c == '}')) < 0)
      break;
  if (open != 0) {
    llvm::errs() << "error: cannot parse --pipeline: unbalanced brackets in '"
                 << text << "'\n";
    return failure();
  }
  std::string nested;
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ',';
    depth += (c == '(' || c == '{') - (c == ')' || c == '}');
    if (c != ',' || depth != 0)
      continue;
    StringRef element = text.slice(begin, i).trim();
    begin = i + 1;
    std::string ignored;
    llvm::raw_string_ostream ignoredStream(ignored);
    OpPassManager probe("builtin.module");
    bool onModule = succeeded(parsePassPipeline(element, probe, ignoredStream));
    nested += (nested.empty() ? "" : ",") +
              (onModule ? element.str() : "func.func(" + element.str() + ")");
  }
  FailureOr<OpPassManager> pm =
      parsePassPipeline("builtin.module(" + nested + ")", errorStream);
  if (failed(pm))
    llvm::errs() << "error: cannot parse --pipeline: " << errors << "\n";
  return pm;
}

/// Opened checkpoints, mapped for as long as the process runs (the JIT
/// code reads the weights in place).
std::vector<flashnorm::safetensors::File> &openCheckpoints() {
  static std::vector<flashnorm::safetensors::File> files;
  return files;
}

/// The tensors of the checkpoint shards `paths`, by name, or an error (a
/// file that is not a valid checkpoint, a tensor in two shards).
FailureOr<
    llvm::StringMap<std::pair<const flashnorm::safetensors::File *,
                              const flashnorm::safetensors::TensorInfo *>>>
loadCheckpoints(ArrayRef<std::string> paths) {
  std::vector<flashnorm::safetensors::File> &files = openCheckpoints();
  llvm::StringMap<std::pair<const flashnorm::safetensors::File *,
                            const flashnorm::safetensors::TensorInfo *>>
      tensors;
  // Opened first, indexed after: the vector must not move a mapped file.
  size_t first = files.size();
  for (const std::string &path : paths) {
    auto file = flashnorm::safetensors::File::open(path, /*map=*/true);
    if (!file) {
      llvm::errs() << "error: " << llvm::toString(file.takeError()) << "\n";
      return failure();
    }
    files.push_back(std::move(*file));
  }
  for (size_t i = first; i < files.size(); ++i)
    for (const flashnorm::safetensors::TensorInfo &t : files[i].getTensors()) {
      auto [it, inserted] = tensors.try_emplace(t.name, &files[i], &t);
      if (!inserted) {
        llvm::errs() << "error: tensor '" << t.name << "' is in both "
                     << it->second.first->getPath() << " and "
                     << files[i].getPath() << "\n";
        return failure();
      }
    }
  return tensors;
}

/// The extern ml_program globals of `module`, by name.
llvm::StringSet<> externGlobalNames(ModuleOp module) {
  llvm::StringSet<> names;
  for (auto global : module.getOps<ml_program::GlobalOp>())
    if (isa_and_nonnull<ml_program::ExternAttr>(
            global.getValue().value_or(Attribute())))
      names.insert(global.getSymName());
  return names;
}

/// One of `externs` that `module` holds as a memref or LLVM global without
/// a value (lowered by the user's pipeline), or "".
std::string findLoweredExtern(ModuleOp module,
                              const llvm::StringSet<> &externs) {
  std::string name;
  module.walk([&](Operation *op) {
    auto memref = dyn_cast<memref::GlobalOp>(op);
    auto llvm = dyn_cast<LLVM::GlobalOp>(op);
    if ((memref && memref.isExternal() &&
         externs.contains(memref.getSymName())) ||
        (llvm && !llvm.getValueOrNull() &&
         llvm.getInitializerRegion().empty() &&
         externs.contains(llvm.getSymName())))
      name = SymbolTable::getSymbolName(op).str();
    return name.empty() ? WalkResult::advance() : WalkResult::interrupt();
  });
  return name;
}

/// Where each extern ml_program global that `module` loads is found in the
/// checkpoints `paths`: its name to the address of its bytes. Checks dtype
/// and shape; every such global must be there (one nothing loads need not).
FailureOr<std::map<std::string, const char *>>
bindExternGlobals(ModuleOp module, ArrayRef<std::string> paths,
                  StringRef what) {
  SmallVector<ml_program::GlobalOp> externs;
  for (auto global : module.getOps<ml_program::GlobalOp>())
    if (isa_and_nonnull<ml_program::ExternAttr>(
            global.getValue().value_or(Attribute())) &&
        !SymbolTable::symbolKnownUseEmpty(global, module))
      externs.push_back(global);
  std::map<std::string, const char *> bound;
  if (externs.empty())
    return bound;
  if (paths.empty()) {
    llvm::errs() << "error: " << what << " loads " << externs.size()
                 << " extern global(s) (@" << externs.front().getSymName()
                 << ", ...): give their checkpoint with "
                 << (what == "the reference" ? "--compare-params" : "--params")
                 << "\n";
    return failure();
  }
  auto tensors = loadCheckpoints(paths);
  if (failed(tensors))
    return failure();
  for (ml_program::GlobalOp global : externs) {
    auto type = cast<RankedTensorType>(global.getType());
    std::string elt;
    llvm::raw_string_ostream os(elt);
    type.getElementType().print(os);
    std::string dtype = flashnorm::safetensors::getDTypeForElementName(elt);
    auto it = tensors->find(global.getSymName());
    if (it == tensors->end()) {
      llvm::errs() << "error: " << what << "'s extern global @"
                   << global.getSymName() << " is in none of the checkpoints ("
                   << llvm::join(paths, ", ") << ")\n";
      return failure();
    }
    const auto &[file, tensor] = it->second;
    if (tensor->dtype != dtype ||
        ArrayRef<int64_t>(tensor->shape) != type.getShape()) {
      llvm::errs() << "error: extern global @" << global.getSymName() << " is "
                   << type << " but " << file->getPath() << " holds it as "
                   << tensor->dtype << " ["
                   << llvm::join(llvm::map_range(tensor->shape,
                                                 [](int64_t d) {
                                                   return std::to_string(d);
                                                 }),
                                 ", ")
                   << "]\n";
      return failure();
    }
    bound[global.getSymName().str()] = file->getData(*tensor);
  }
  return bound;
}

/// Only the called functions and what they call are compiled: a @main
/// that prints through runtime functions should not need them here. (The
/// others become private, for SymbolDCE.)
void keepOnly(ModuleOp module, ArrayRef<std::string> functions) {
  for (auto fn : module.getOps<func::FuncOp>())
    if (!llvm::is_contained(functions, fn.getName()))
      fn.setPrivate();
}

/// Lowers `module` (after `passes`, if any) for the CPU and JITs it, with
/// `functions` callable and its extern globals bound to the checkpoints
/// `params`.
FailureOr<ExecutionEngine *> compile(ModuleOp module, OpPassManager *passes,
                                     ArrayRef<std::string> functions,
                                     ArrayRef<std::string> params,
                                     StringRef what) {
  keepOnly(module, functions);
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  llvm::StringSet<> externs = externGlobalNames(module);
  if (passes) {
    PassManager userPm(module.getContext());
    static_cast<OpPassManager &>(userPm) = *passes;
    if (failed(userPm.run(module)))
      return failure(); // The diagnostics are already printed.
  }
  // After the user's pipeline, which may load other globals, and once the
  // functions that are not run (and what only they load) are gone.
  PassManager dce(module.getContext());
  dce.addPass(createSymbolDCEPass());
  if (failed(dce.run(module)))
    return failure();
  // Bound by name below, as ml_program globals: past the lowering, the JIT
  // would report a symbol it cannot find.
  if (std::string lowered = findLoweredExtern(module, externs);
      !lowered.empty() && passes) {
    llvm::errs() << "error: --pipeline lowered the extern global @" << lowered
                 << " before flashnorm-run could bind it to the checkpoint: "
                    "give --pipeline the rewrite only (flashnorm-run lowers "
                    "the result itself)\n";
    return failure();
  }
  FailureOr<std::map<std::string, const char *>> bound =
      bindExternGlobals(module, params, what);
  if (failed(bound))
    return failure();
  PassManager pm(module.getContext());
  flashnorm::CpuPipelineOptions cpu;
  cpu.concurrent = concurrent.getValue();
  cpu.concurrentMinBytes = 0;
  cpu.packWeights = packWeights.getValue();
  if (failed(flashnorm::buildCpuPipeline(pm, cpu, errorStream))) {
    llvm::errs() << "error: " << errors << "\n";
    return failure();
  }
  if (failed(pm.run(module)))
    return failure(); // The diagnostics are already printed.

  // memrefCopy and the printers live in the runner utilities.
  SmallVector<StringRef> libs{
      FLASHNORM_MLIR_LIB_DIR "/libmlir_c_runner_utils.so",
      FLASHNORM_MLIR_LIB_DIR "/libmlir_runner_utils.so"};
  for (const std::string &lib : sharedLibs)
    libs.push_back(lib);
  // Async tasks (concurrent statistics, projections split over the cores)
  // call into MLIR's async runtime.
  libs.push_back(FLASHNORM_MLIR_LIB_DIR "/libmlir_async_runtime.so");
  // Projections split over the cores run on OpenMP threads.
  libs.push_back(FLASHNORM_MLIR_LIB_DIR "/libomp.so");
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
  (*engine)->registerSymbols([&](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    for (const auto &[name, data] : *bound)
      symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(data),
                                 llvm::JITSymbolFlags::Exported};
    return symbols;
  });
  liveEngines().push_back(std::move(*engine));
  return liveEngines().back().get();
}

/// Where each result sits in the struct the packed wrapper writes: memref
/// descriptors {ptr, ptr, offset, sizes..., strides...} and scalars, each
/// at its natural alignment.
SmallVector<size_t> resultOffsets(FunctionType type, size_t &total) {
  SmallVector<size_t> offsets;
  total = 0;
  for (Type t : type.getResults()) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    size_t size =
        tensor ? 8 * (3 + 2 * tensor.getRank()) : byteWidth(*kindOf(t));
    size_t align = tensor ? 8 : size;
    total = llvm::alignTo(total, align);
    offsets.push_back(total);
    total += size;
  }
  total = llvm::alignTo(total, 8);
  return offsets;
}

/// The arguments of a call in the memref calling convention (each memref
/// is (allocated, aligned, offset, sizes..., strides...), each scalar
/// itself), built once: tensors are copied into 64-byte aligned buffers of
/// their own (the callee may write them), so that timed calls reuse them.
struct CallArgs {
  std::vector<std::vector<char>> buffers;
  std::vector<std::vector<int64_t>> descriptors; // offset, sizes, strides
  std::vector<void *> pointers;
  SmallVector<void *> args;

  explicit CallArgs(ArrayRef<HostValue> inputs) : pointers(2 * inputs.size()) {
    for (const HostValue &in : inputs) {
      buffers.emplace_back(in.bytes.size() + 64);
      if (in.scalar) {
        std::memcpy(buffers.back().data(), in.bytes.data(), in.bytes.size());
        descriptors.emplace_back();
        continue;
      }
      char *data = buffers.back().data();
      char *aligned = data + (64 - reinterpret_cast<uintptr_t>(data) % 64) % 64;
      std::memcpy(aligned, in.bytes.data(), in.bytes.size());
      pointers[2 * descriptors.size()] = pointers[2 * descriptors.size() + 1] =
          aligned;
      std::vector<int64_t> desc{0};
      desc.insert(desc.end(), in.shape.begin(), in.shape.end());
      SmallVector<int64_t> strides(in.shape.size(), 1);
      for (int64_t d = static_cast<int64_t>(in.shape.size()) - 2; d >= 0; --d)
        strides[d] = strides[d + 1] * in.shape[d + 1];
      desc.insert(desc.end(), strides.begin(), strides.end());
      descriptors.push_back(std::move(desc));
    }
    for (auto [i, in] : llvm::enumerate(inputs)) {
      if (in.scalar) {
        args.push_back(buffers[i].data());
        continue;
      }
      args.push_back(&pointers[2 * i]);
      args.push_back(&pointers[2 * i + 1]);
      for (int64_t &s : descriptors[i])
        args.push_back(&s);
    }
  }
  // `args` points into the members.
  CallArgs(const CallArgs &) = delete;
  CallArgs &operator=(const CallArgs &) = delete;
};

/// Calls `name` (of type `type`) with `call`'s arguments; its results.
FailureOr<SmallVector<HostValue>> invoke(ExecutionEngine &engine,
                                         StringRef name, FunctionType type,
                                         const CallArgs &call) {
  const std::vector<std::vector<char>> &buffers = call.buffers;
  SmallVector<void *> args(call.args);
  size_t resultBytes;
  SmallVector<size_t> offsets = resultOffsets(type, resultBytes);
  std::vector<int64_t> resultStorage(std::max<size_t>(resultBytes / 8, 1));
  auto *results = reinterpret_cast<char *>(resultStorage.data());
  if (!type.getResults().empty())
    args.push_back(results);
  if (llvm::Error err = engine.invokePacked(name, args)) {
    llvm::errs() << "error: calling @" << name
                 << " failed: " << llvm::toString(std::move(err)) << "\n";
    return failure();
  }

  SmallVector<HostValue> outputs;
  SmallVector<char *> freedResults;
  for (auto [t, offset] : llvm::zip(type.getResults(), offsets)) {
    HostValue out = HostValue::of(t);
    const char *field = results + offset;
    if (out.scalar) {
      std::memcpy(out.bytes.data(), field, out.bytes.size());
      outputs.push_back(std::move(out));
      continue;
    }
    int64_t rank = out.shape.size();
    auto *allocated = readAs<char *>(field);
    auto *aligned = readAs<char *>(field + 8);
    int64_t base = readAs<int64_t>(field + 16);
    SmallVector<int64_t> strides;
    for (int64_t d = 0; d < rank; ++d)
      strides.push_back(readAs<int64_t>(field + 8 * (3 + rank + d)));
    size_t width = byteWidth(out.kind);
    SmallVector<int64_t> index(rank, 0);
    for (size_t flat = 0; flat < out.size(); ++flat) {
      int64_t pos = base;
      for (int64_t d = 0; d < rank; ++d)
        pos += index[d] * strides[d];
      std::memcpy(&out.bytes[flat * width], aligned + pos * width, width);
      for (int64_t d = rank - 1; d >= 0; --d) { // Row-major increment.
        if (++index[d] < out.shape[d])
          break;
        index[d] = 0;
      }
    }
    // A result the function allocated (malloc) is freed; one that aliases
    // an argument (bufferization may write an argument in place) is ours.
    bool isArgument = llvm::any_of(buffers, [&](const std::vector<char> &b) {
      return allocated >= b.data() && allocated < b.data() + b.size();
    });
    // (Two results may share one allocation.)
    if (!isArgument && !llvm::is_contained(freedResults, allocated)) {
      freedResults.push_back(allocated);
      std::free(allocated);
    }
    outputs.push_back(std::move(out));
  }
  return outputs;
}

/// Calls `name` (of type `type`) with `inputs`.
FailureOr<SmallVector<HostValue>> invoke(ExecutionEngine &engine,
                                         StringRef name, FunctionType type,
                                         ArrayRef<HostValue> inputs) {
  CallArgs call(inputs);
  return invoke(engine, name, type, call);
}

/// With --time: calls `name` that many more times on `inputs`, marshalled
/// once (as a server holds its weights), and prints the median wall time.
void timeCalls(ExecutionEngine &engine, StringRef name, FunctionType type,
               ArrayRef<HostValue> inputs) {
  if (!timeRuns)
    return;
  CallArgs call(inputs);
  std::vector<double> times;
  for (unsigned i = 0; i < timeRuns; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (failed(invoke(engine, name, type, call)))
      exitWith(1);
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(times.begin(), times.end());
  llvm::outs() << llvm::format("time: median %.3f ms of %u calls\n",
                               times[times.size() / 2] * 1e3,
                               timeRuns.getValue());
}

std::string shapeString(const HostValue &t) {
  std::string s;
  for (int64_t d : t.shape)
    s += std::to_string(d) + "x";
  return s + kindName(t.kind);
}

void printOutputs(StringRef label, ArrayRef<HostValue> outputs) {
  if (printMode == PrintMode::None)
    return;
  for (auto [i, out] : llvm::enumerate(outputs)) {
    double sum = 0, abs = 0;
    for (size_t j = 0; j < out.size(); ++j) {
      sum += out.get(j);
      abs += std::fabs(out.get(j));
    }
    llvm::outs() << label << "output #" << i << " " << shapeString(out)
                 << llvm::format(": sum %.6g, sum|x| %.6g", sum, abs);
    if (printMode == PrintMode::Values) {
      llvm::outs() << ", values";
      for (size_t j = 0; j < out.size(); ++j)
        llvm::outs() << llvm::format(" %.6g", out.get(j));
    }
    llvm::outs() << "\n";
  }
}

/// Per output: the largest errors and whether all are within tolerance.
bool compareOutputs(ArrayRef<HostValue> expected, ArrayRef<HostValue> actual) {
  bool ok = true;
  for (auto [i, pair] : llvm::enumerate(llvm::zip(expected, actual))) {
    auto [e, a] = pair;
    double maxAbs = 0, maxRel = 0;
    int64_t bad = 0, worst = -1;
    double worstExcess = 0;
    for (size_t j = 0; j < e.size(); ++j) {
      double x = e.get(j), y = a.get(j);
      // NaN and the infinities match only themselves: a tolerance around
      // an infinity is infinite, and inf - inf is NaN, which no comparison
      // counts. A mismatch there is an infinite error (not lost to max()).
      constexpr double inf = std::numeric_limits<double>::infinity();
      bool special = !std::isfinite(x) || !std::isfinite(y);
      bool specialMismatch =
          special && x != y && !(std::isnan(x) && std::isnan(y));
      double err = !special ? std::fabs(x - y) : specialMismatch ? inf : 0;
      maxAbs = std::max(maxAbs, err);
      if (x != 0)
        maxRel = std::max(maxRel, err / std::fabs(x));
      double excess = specialMismatch ? inf
                      : special       ? 0
                                      : err - (absTol + relTol * std::fabs(x));
      if (excess > 0) {
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
          static_cast<long long>(bad), e.size(), relTol.getValue(),
          absTol.getValue(), static_cast<long long>(worst), e.get(worst),
          a.get(worst));
    }
    llvm::outs() << "\n";
  }
  llvm::outs() << (ok ? "MATCH" : "MISMATCH") << "\n";
  return ok;
}

/// The function `name` of `module` and its type, or an error.
FailureOr<FunctionType> checkFunction(ModuleOp module, StringRef name,
                                      StringRef where) {
  auto fn = module.lookupSymbol<func::FuncOp>(name);
  if (!fn || fn.isExternal()) {
    llvm::errs() << "error: " << where << " has no function @" << name
                 << " with a body\n";
    return failure();
  }
  FunctionType type = fn.getFunctionType();
  for (auto [kind, types] : {std::make_pair("argument", type.getInputs()),
                             std::make_pair("result", type.getResults())})
    for (auto [i, t] : llvm::enumerate(types))
      if (std::string why = unsupported(t); !why.empty()) {
        llvm::errs() << "error: @" << name << " " << kind << " #" << i
                     << " has type " << t << ": " << why
                     << " (flashnorm-run feeds static tensors and scalars)\n";
        return failure();
      }
  return type;
}

/// The arguments of `fn` that its prepare function folds, in the order it
/// returns them.
SmallVector<unsigned> foldedArguments(func::FuncOp fn) {
  SmallVector<unsigned> folded;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (fn.getArgAttr(i, flashnorm::kFoldedArgAttr))
      folded.push_back(i);
  return folded;
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

  if (failed(checkOptions()))
    return 1;
  std::string passText = pipeline;
  if (prepare && passText.empty())
    passText = "flashnorm{prepare-function=1}";
  std::optional<OpPassManager> passes;
  if (!passText.empty()) {
    FailureOr<OpPassManager> parsed = parseUserPipeline(passText);
    if (failed(parsed))
      return 1;
    passes.emplace(std::move(*parsed));
  }

  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(inputFile, &context);
  if (!module)
    return 1;
  FailureOr<FunctionType> type = checkFunction(*module, entry, inputFile);
  if (failed(type))
    return 1;
  FailureOr<SmallVector<HostValue>> inputs = makeInputs(*type);
  if (failed(inputs))
    return 1;

  OwningOpRef<ModuleOp> reference;
  if (compare || prepare) {
    reference = compareWith.empty()
                    ? OwningOpRef<ModuleOp>(module->clone())
                    : parseSourceFile<ModuleOp>(compareWith, &context);
    if (!reference)
      return 1;
    FailureOr<FunctionType> refType = checkFunction(
        *reference, entry, compareWith.empty() ? inputFile : compareWith);
    if (failed(refType))
      return 1;
    if (*refType != *type) {
      llvm::errs() << "error: @" << entry << " has type " << *refType
                   << " in the reference but " << *type << " in the input\n";
      return 1;
    }
  }

  SmallVector<HostValue> outputs;
  if (prepare) {
    // The pipeline first: it makes the prepare function.
    std::string prepareName = entry + "_flashnorm_prepare";
    if (passes) {
      PassManager userPm(&context);
      static_cast<OpPassManager &>(userPm) = *passes;
      if (failed(userPm.run(*module)))
        exitWith(1);
    }
    // The CPU pipeline's first step on them (unless --pack-weights=false):
    // the prepare function returns its weights in the kernel's panels,
    // which @entry then takes (the prepare function's contract): both are
    // called with the types it leaves. On the module compile() lowers (the
    // functions not run gone, and their calls with them), so that the
    // pipeline packs nothing more.
    keepOnly(*module, {entry, prepareName});
    PassManager packPm(&context);
    packPm.addPass(createSymbolDCEPass());
    if (packWeights)
      packPm.addPass(flashnorm::createPackPreparedWeights());
    if (failed(packPm.run(*module)))
      exitWith(1);
    FailureOr<FunctionType> prepareType =
        checkFunction(*module, prepareName, "the rewritten module");
    FailureOr<FunctionType> preparedType =
        checkFunction(*module, entry, "the rewritten module");
    if (failed(prepareType) || failed(preparedType))
      exitWith(1);
    SmallVector<unsigned> folded =
        foldedArguments(module->lookupSymbol<func::FuncOp>(entry));
    if (folded.size() != prepareType->getNumResults()) {
      llvm::errs() << "error: @" << prepareName << " returns "
                   << prepareType->getNumResults() << " values but @" << entry
                   << " marks " << folded.size()
                   << " arguments flashnorm.folded\n";
      exitWith(1);
    }
    FailureOr<ExecutionEngine *> engine = compile(
        *module, nullptr, {entry, prepareName}, paramFiles, "the input");
    if (failed(engine))
      exitWith(1);
    FailureOr<SmallVector<HostValue>> weights =
        invoke(**engine, prepareName, *prepareType, *inputs);
    if (failed(weights))
      exitWith(1);
    // The prepared values replace the weights they were, and fill the
    // arguments the fold appended (a LayerNorm's bias through a weight,
    // column sums).
    SmallVector<HostValue> preparedInputs(*inputs);
    preparedInputs.resize(preparedType->getNumInputs());
    for (auto [arg, weight] : llvm::zip(folded, *weights))
      preparedInputs[arg] = std::move(weight);
    FailureOr<SmallVector<HostValue>> result =
        invoke(**engine, entry, *preparedType, preparedInputs);
    if (failed(result))
      exitWith(1);
    // The weights prepared once, the step timed on them.
    timeCalls(**engine, entry, *preparedType, preparedInputs);
    outputs = std::move(*result);
  } else {
    FailureOr<ExecutionEngine *> engine = compile(
        *module, passes ? &*passes : nullptr, {entry}, paramFiles, "the input");
    if (failed(engine))
      exitWith(1);
    FailureOr<SmallVector<HostValue>> result =
        invoke(**engine, entry, *type, *inputs);
    if (failed(result))
      exitWith(1);
    timeCalls(**engine, entry, *type, *inputs);
    outputs = std::move(*result);
  }
  if (!reference) {
    printOutputs("", outputs);
    exitWith(0);
  }
  // The reference runs without --pipeline (it is the "before" side).
  FailureOr<ExecutionEngine *> refEngine =
      compile(*reference, nullptr, {entry},
              compareParamFiles.empty() ? paramFiles : compareParamFiles,
              "the reference");
  if (failed(refEngine))
    exitWith(1);
  FailureOr<SmallVector<HostValue>> expected =
      invoke(**refEngine, entry, *type, *inputs);
  if (failed(expected))
    exitWith(1);
  printOutputs("reference ", *expected);
  printOutputs("", outputs);
  exitWith(compareOutputs(*expected, outputs) ? 0 : 1);
}
