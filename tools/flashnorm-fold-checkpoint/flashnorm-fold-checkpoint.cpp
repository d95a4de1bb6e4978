//===- flashnorm-fold-checkpoint.cpp - Apply a fold plan to a checkpoint --===//
//
//   flashnorm-fold-checkpoint --plan plan.json in.safetensors [more shards]
//       -o out.safetensors
//
// Writes one safetensors file holding every tensor of the input shards but
// those the plan drops, byte for byte, plus the tensors the plan computes
// (flashnorm-fold-gains wrote it: folded gains, mean-centering, folded
// biases), with the project's one raw-buffer folder: f64, rounded once.
//
// Built to run at disk speed in bounded memory, whatever the checkpoint's
// size: the output layout (header and every offset) is fixed before a byte
// of data moves, so worker threads write their tensors in place (pwrite)
// in any order; copies are copy_file_range (the kernel moves the bytes),
// folds read the input in blocks of consecutive k into per-thread buffers
// (the memory is those buffers and the column sums, whatever the size). Nothing
// is trusted before it is checked (headers, the plan against the tensors), and
// nothing partial is left behind: the output is a temporary file in the
// destination's directory, sized in full first (no space is an error
// before any work), renamed into place at the end and removed on any
// error or interrupt.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Utils/FoldPlan.h"
#include "flashnorm/Utils/Safetensors.h"
#include "flashnorm/Utils/WeightFolder.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <system_error>
#include <thread>
#include <unistd.h>

using namespace mlir::flashnorm;
namespace cl = llvm::cl;
namespace st = mlir::flashnorm::safetensors;

static cl::OptionCategory category("flashnorm-fold-checkpoint options");
static cl::opt<std::string> planFile("plan", cl::desc("The fold plan (JSON)"),
                                     cl::value_desc("file"), cl::Required,
                                     cl::cat(category));
static cl::list<std::string> inputs(cl::Positional, cl::OneOrMore,
                                    cl::desc("<in.safetensors> [more shards]"),
                                    cl::cat(category));
static cl::opt<std::string> output("o", cl::desc("Output safetensors file"),
                                   cl::value_desc("file"), cl::Required,
                                   cl::cat(category));
static cl::opt<unsigned>
    threads("jobs",
            cl::desc("Worker threads (default: one per hardware thread)"),
            cl::init(0), cl::cat(category));

namespace {
/// Bytes each worker folds per block (bounds the memory, with the input
/// pages it releases behind itself).
constexpr uint64_t kBlockBytes = 8 << 20;

/// The temporary output, removed by the signal handler on an interrupt.
char tempPath[4096];

extern "C" void removeTempAndExit(int sig) {
  if (tempPath[0])
    ::unlink(tempPath);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

/// Reports and exits, from any thread: the temporary output goes, and no
/// destructor runs under the other workers' feet.
[[noreturn]] void die(const llvm::Twine &msg) {
  static std::mutex once;
  once.lock();
  if (tempPath[0])
    ::unlink(tempPath);
  llvm::errs() << "flashnorm-fold-checkpoint: error: " << msg << "\n";
  llvm::errs().flush();
  std::_Exit(1);
}

std::optional<FloatKind> floatKind(llvm::StringRef dtype) {
  if (dtype == "F16")
    return FloatKind::F16;
  if (dtype == "BF16")
    return FloatKind::BF16;
  if (dtype == "F32")
    return FloatKind::F32;
  if (dtype == "F64")
    return FloatKind::F64;
  return std::nullopt;
}

std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

/// A tensor of an input shard.
struct Source {
  const st::File *file;
  const st::TensorInfo *tensor;
};

/// One tensor of the output: copied from a source, or computed by a plan
/// entry.
struct Job {
  st::OutputTensor out;
  uint64_t offset = 0; // In the output file.
  std::optional<Source> copy;
  const PlanTensor *fold = nullptr;
  /// The plan's vector, resolved to K values.
  std::vector<double> vector;
};

/// Writes all of `data` at `offset`.
void writeAt(int fd, const char *data, uint64_t size, uint64_t offset) {
  while (size) {
    ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      die(llvm::formatv("writing {0}: {1}", output.getValue(),
                        std::strerror(n < 0 ? errno : ENOSPC)));
    data += n;
    size -= n;
    offset += n;
  }
}

/// The bytes of a source tensor, copied by the kernel (copy_file_range),
/// or through a buffer where the file systems do not allow that.
void copyTensor(int outFD, const Source &src, uint64_t offset) {
  loff_t in = static_cast<loff_t>(src.file->getDataStart() + src.tensor->begin);
  loff_t out = static_cast<loff_t>(offset);
  uint64_t left = src.tensor->size();
  while (left) {
    ssize_t n = ::copy_file_range(src.file->getFD(), &in, outFD, &out,
                                  std::min<uint64_t>(left, 1 << 30), 0);
    if (n > 0) {
      left -= n;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno != EXDEV && errno != ENOSYS && errno != EINVAL &&
        errno != EOPNOTSUPP)
      die(llvm::formatv("copying '{0}' into {1}: {2}", src.tensor->name,
                        output.getValue(), std::strerror(errno)));
    if (n == 0)
      die(llvm::formatv("{0}: truncated while copying '{1}'",
                        src.file->getPath(), src.tensor->name));
    // Fallback: through a buffer.
    std::vector<char> buffer(std::min<uint64_t>(left, kBlockBytes));
    while (left) {
      size_t chunk = std::min<uint64_t>(left, buffer.size());
      ssize_t r = ::pread(src.file->getFD(), buffer.data(), chunk, in);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        die(llvm::formatv("{0}: cannot read '{1}'", src.file->getPath(),
                          src.tensor->name));
      writeAt(outFD, buffer.data(), r, out);
      in += r;
      out += r;
      left -= r;
    }
  }
}

/// Reads `size` bytes of a source tensor from byte `offset` of its data
/// into `buffer`. Reading (one copy out of the page cache) beats mapping
/// here: a worker that maps and releases blocks makes the kernel shoot
/// down the other workers' TLB entries at every release.
const char *readBlock(const Source &src, uint64_t offset, uint64_t size,
                      std::vector<char> &buffer) {
  buffer.resize(size);
  uint64_t at = src.file->getDataStart() + src.tensor->begin + offset;
  for (uint64_t done = 0; done < size;) {
    ssize_t n = ::pread(src.file->getFD(), buffer.data() + done, size - done,
                        static_cast<off_t>(at + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      die(llvm::formatv("{0}: cannot read '{1}'", src.file->getPath(),
                        src.tensor->name));
    done += n;
  }
  return buffer.data();
}

/// The [outer, K, inner] view of a source around the plan's axis.
struct AxisView {
  int64_t outer = 1, numK = 1, inner = 1;
};
AxisView axisView(llvm::ArrayRef<int64_t> shape, int64_t axis) {
  AxisView v;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    (d < axis ? v.outer : d == axis ? v.numK : v.inner) *= shape[d];
  return v;
}

/// A block of the [outer, K, inner] view: o in [o0, o0 + oc), k in
/// [k0, k0 + kc), all of inner; contiguous in memory (oc == 1 or all of K).
struct Block {
  int64_t o0, oc, k0, kc;
};

/// Runs `fn(block)` over blocks of about `budget` elements, in memory
/// order: several whole o slices where one fits, else runs of consecutive
/// k of one o (the order the folder's sums need).
template <typename Fn>
void forEachBlock(const AxisView &v, uint64_t budget, Fn fn) {
  // No elements, no blocks (however long the other dimensions).
  if (v.outer == 0 || v.numK == 0 || v.inner == 0)
    return;
  int64_t slice = std::max<int64_t>(1, v.numK * v.inner);
  if (static_cast<uint64_t>(slice) <= budget) {
    int64_t perBlock = static_cast<int64_t>(budget / slice);
    for (int64_t o0 = 0; o0 < v.outer; o0 += perBlock)
      fn(Block{o0, std::min(perBlock, v.outer - o0), 0, v.numK});
    return;
  }
  int64_t kPerBlock = std::max<int64_t>(
      1, static_cast<int64_t>(budget / std::max<int64_t>(v.inner, 1)));
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t k0 = 0; k0 < v.numK; k0 += kPerBlock)
      fn(Block{o, 1, k0, std::min(kPerBlock, v.numK - k0)});
}

/// Computes a plan tensor from its source, block by block (`input` and
/// `buffer` are the worker's: its memory).
void foldTensor(int outFD, const Job &job, const Source &src,
                std::vector<char> &input, std::vector<char> &buffer) {
  const PlanTensor &t = *job.fold;
  FloatKind kind = *floatKind(src.tensor->dtype);
  size_t width = getByteWidth(kind);
  AxisView v = axisView(src.tensor->shape, t.axis);
  uint64_t budget = kBlockBytes / width;
  llvm::ArrayRef<double> vec(job.vector);
  // Where a block starts (elements), and its size.
  auto start = [&](const Block &b) { return (b.o0 * v.numK + b.k0) * v.inner; };
  auto count = [&](const Block &b) { return b.oc * b.kc * v.inner; };
  auto read = [&](const Block &b) {
    return readBlock(src, start(b) * width, count(b) * width, input);
  };

  if (t.op != PlanTensor::Op::Scale) {
    std::vector<double> sums(v.outer * v.inner, 0.0);
    if (t.op == PlanTensor::Op::Contract) {
      forEachBlock(v, budget, [&](const Block &b) {
        sumAlongAxisRaw(kind, read(b), false, b.oc, vec.slice(b.k0, b.kc),
                        v.inner, sums.data() + b.o0 * v.inner);
      });
    } else {
      // Column sums: of what `scale` writes with the same vector, each
      // block folded and rounded to the source's type as there, then
      // summed along k exactly (in f64).
      std::vector<double> ones(v.numK, 1.0);
      std::vector<char> folded;
      forEachBlock(v, budget, [&](const Block &b) {
        folded.resize(count(b) * width);
        FoldLosses losses =
            scaleRawAlongAxis(kind, read(b), false, folded.data(), b.oc,
                              vec.slice(b.k0, b.kc), v.inner, nullptr);
        if (losses.overflows)
          die(llvm::formatv("summing '{0}' folded into '{1}': {2} folded "
                            "element(s) overflow {3}",
                            t.source, t.name, losses.overflows,
                            src.tensor->dtype));
        sumAlongAxisRaw(kind, folded.data(), false, b.oc,
                        llvm::ArrayRef(ones).slice(b.k0, b.kc), v.inner,
                        sums.data() + b.o0 * v.inner);
      });
    }
    FloatKind outKind = *floatKind(t.dtype);
    buffer.resize(sums.size() * getByteWidth(outKind));
    encodeRaw(outKind, sums.data(), sums.size(), buffer.data());
    // As the scaled weights: a bias that overflows its type (or sums a gain
    // that is not finite) is an error, not an inf in the checkpoint.
    std::vector<double> written(sums.size());
    decodeRaw(outKind, buffer.data(), sums.size(), written.data());
    if (int64_t bad =
            llvm::count_if(written, [](double x) { return !std::isfinite(x); }))
      die(llvm::formatv("{0} '{1}' through '{2}': {3} element(s) are not "
                        "finite in {4}",
                        t.op == PlanTensor::Op::Contract
                            ? "folding the bias"
                            : "summing the columns of",
                        t.name, t.source, bad, t.dtype));
    writeAt(outFD, buffer.data(), buffer.size(), job.offset);
    return;
  }

  // Centering: each column's mean of the scaled weight first (one pass),
  // then the centered fold (a second), as the in-IR folder does.
  if (v.outer == 0 || v.numK == 0 || v.inner == 0)
    return; // Nothing to scale.
  std::vector<double> shift;
  if (t.center) {
    shift.assign(v.outer * v.inner, 0.0);
    forEachBlock(v, budget, [&](const Block &b) {
      sumAlongAxisRaw(kind, read(b), false, b.oc, vec.slice(b.k0, b.kc),
                      v.inner, shift.data() + b.o0 * v.inner);
    });
    for (double &m : shift)
      m /= static_cast<double>(v.numK);
  }
  int64_t underflows = 0;
  forEachBlock(v, budget, [&](const Block &b) {
    const char *p = read(b);
    uint64_t elements = count(b), bytes = elements * width;
    buffer.resize(bytes);
    int64_t overflows;
    if (t.center) {
      scaleAndShiftRaw(kind, p, false, buffer.data(), b.oc,
                       vec.slice(b.k0, b.kc), v.inner,
                       shift.data() + b.o0 * v.inner);
      overflows = countOverflowsRaw(kind, p, false, buffer.data(), elements);
    } else {
      FoldLosses losses =
          scaleRawAlongAxis(kind, p, false, buffer.data(), b.oc,
                            vec.slice(b.k0, b.kc), v.inner, nullptr);
      overflows = losses.overflows;
      underflows += losses.underflows;
    }
    if (overflows)
      die(llvm::formatv("folding '{0}' into '{1}': {2} element(s) overflow "
                        "{3} (the original is finite); the IR would have "
                        "refused this fold",
                        t.source, t.name, overflows, t.dtype));
    writeAt(outFD, buffer.data(), bytes, job.offset + start(b) * width);
  });
  if (!underflows)
    return;
  // Some products fell below the type's normal range: whether that cost
  // more than the fold's one rounding is a question about whole outputs,
  // which span blocks; a second pass folds them again and tallies (rare:
  // f16 weights times tiny gains).
  std::vector<double> magnitude(v.outer * v.inner, 0.0);
  std::vector<int64_t> underflowed(v.outer * v.inner, 0);
  forEachBlock(v, budget, [&](const Block &b) {
    const char *p = read(b);
    buffer.resize(count(b) * width);
    scaleRawAlongAxis(kind, p, false, buffer.data(), b.oc,
                      vec.slice(b.k0, b.kc), v.inner, nullptr);
    tallyUnderflowRaw(
        kind, p, false, buffer.data(), b.oc, vec.slice(b.k0, b.kc), v.inner,
        magnitude.data() + b.o0 * v.inner, underflowed.data() + b.o0 * v.inner);
  });
  if (int64_t lossy = countUnderflowedOutputs(kind, magnitude, underflowed))
    die(llvm::formatv("folding '{0}' into '{1}': {2} output(s) fall mostly "
                      "below {3}'s normal range ({4} product(s) underflow); "
                      "the IR would have refused this fold",
                      t.source, t.name, lossy, t.dtype, underflows));
}

/// The plan's vector of `t` as K doubles: literal values, or
/// `scale * tensor + offset` read from the checkpoint.
std::vector<double> resolveVector(const PlanTensor &t, int64_t numK,
                                  const llvm::StringMap<Source> &sources) {
  if (t.vector.tensor.empty())
    return std::vector<double>(t.vector.values.begin(), t.vector.values.end());
  auto it = sources.find(t.vector.tensor);
  if (it == sources.end())
    die(llvm::formatv("the plan folds '{0}' with '{1}', which is in none of "
                      "the input checkpoints",
                      t.name, t.vector.tensor));
  const st::TensorInfo &g = *it->second.tensor;
  std::optional<FloatKind> kind = floatKind(g.dtype);
  if (!kind || g.getNumElements() != numK)
    die(llvm::formatv("'{0}' is {1} {2}; folding '{3}' needs {4} floats",
                      g.name, g.dtype, shapeString(g.shape), t.name, numK));
  std::vector<char> bytes;
  std::vector<double> values(numK);
  decodeRaw(*kind, readBlock(it->second, 0, g.size(), bytes), numK,
            values.data());
  // (Folded, a NaN or inf would read as an overflow of the weight.)
  if (int64_t bad =
          llvm::count_if(values, [](double x) { return !std::isfinite(x); }))
    die(llvm::formatv("'{0}' holds {1} value(s) that are not finite (NaN or "
                      "inf); folding it into '{2}' would write them into "
                      "the weight",
                      g.name, bad, t.name));
  for (double &x : values)
    x = t.vector.scale * x + t.vector.offset;
  return values;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "flashnorm-fold-checkpoint: applies a flashnorm fold plan to a "
      "safetensors checkpoint\n");

  // The output replaces a file, by a rename: never a device (a rename
  // over /dev/null replaces the device), a directory or the plan itself,
  // and through a symbolic link, the file it names (as cp writes).
  if (output == "-")
    die("-o - is not supported: the output is written in place, by several "
        "threads at once; name a file");
  llvm::sys::fs::file_status outStatus;
  // (A link to nothing: the rename would replace the link.)
  if (llvm::sys::fs::status(output, outStatus, /*follow=*/true) &&
      !llvm::sys::fs::status(output, outStatus, /*follow=*/false) &&
      outStatus.type() == llvm::sys::fs::file_type::symlink_file)
    die(llvm::formatv("the output {0} is a symbolic link to nothing",
                      output.getValue()));
  if (!llvm::sys::fs::status(output, outStatus, /*follow=*/true)) {
    if (!llvm::sys::fs::is_regular_file(outStatus))
      die(llvm::formatv("the output {0} exists and is not a regular file",
                        output.getValue()));
    llvm::SmallString<256> real;
    if (llvm::sys::fs::real_path(output, real))
      die(llvm::formatv("cannot resolve the output {0}", output.getValue()));
    bool same = false;
    if (!llvm::sys::fs::equivalent(output, planFile, same) && same)
      die(llvm::formatv("the output {0} is the plan, which it would "
                        "overwrite",
                        output.getValue()));
    output = std::string(real);
  }
  // A plan is a file fold-gains wrote: a device or a pipe (/dev/zero)
  // would be read without end.
  llvm::sys::fs::file_status planStatus;
  if (!llvm::sys::fs::status(planFile, planStatus) &&
      !llvm::sys::fs::is_regular_file(planStatus))
    die(llvm::formatv("the plan {0} is not a regular file",
                      planFile.getValue()));
  auto planText = llvm::MemoryBuffer::getFile(planFile, /*IsText=*/true);
  if (!planText)
    die(llvm::formatv("cannot read the plan {0}: {1}", planFile.getValue(),
                      planText.getError().message()));
  llvm::Expected<FoldPlan> plan = FoldPlan::fromJSON((*planText)->getBuffer());
  if (!plan)
    die(planFile + ": " + llvm::toString(plan.takeError()));

  // Every shard, its header checked; every tensor in exactly one.
  std::vector<st::File> files;
  files.reserve(inputs.size());
  for (const std::string &path : inputs) {
    llvm::Expected<st::File> file = st::File::open(path, /*map=*/false);
    if (!file)
      die(llvm::toString(file.takeError()));
    files.push_back(std::move(*file));
  }
  llvm::StringMap<Source> sources;
  std::map<std::string, std::string> metadata;
  for (const st::File &file : files) {
    for (const st::TensorInfo &t : file.getTensors()) {
      auto [it, inserted] = sources.try_emplace(t.name, Source{&file, &t});
      if (!inserted)
        die(llvm::formatv("tensor '{0}' is in both {1} and {2}", t.name,
                          it->second.file->getPath(), file.getPath()));
    }
    for (const auto &[k, v] : file.getMetadata())
      metadata.emplace(k, v); // The first shard's value wins.
  }

  // The plan against the checkpoint, all of it before any output.
  std::vector<Job> jobs;
  llvm::StringSet<> dropped, written;
  for (const std::string &name : plan->drop) {
    if (!sources.count(name))
      die(llvm::formatv("the plan drops '{0}', which is in none of the input "
                        "checkpoints",
                        name));
    dropped.insert(name);
  }
  for (const PlanTensor &t : plan->tensors) {
    auto it = sources.find(t.source);
    if (it == sources.end())
      die(llvm::formatv("the plan computes '{0}' from '{1}', which is in none "
                        "of the input checkpoints",
                        t.name, t.source));
    const st::TensorInfo &src = *it->second.tensor;
    if (src.dtype != t.sourceDType ||
        llvm::ArrayRef<int64_t>(src.shape) != llvm::ArrayRef(t.sourceShape))
      die(llvm::formatv("'{0}' is {1} {2} in {3}, but the plan (the IR) has "
                        "it as {4} {5}",
                        t.source, src.dtype, shapeString(src.shape),
                        it->second.file->getPath(), t.sourceDType,
                        shapeString(t.sourceShape)));
    if (sources.count(t.name) && !dropped.count(t.name))
      die(llvm::formatv("the plan writes '{0}', which the checkpoint already "
                        "holds",
                        t.name));
    // As canCarryCentering: rounded f16/bf16 columns no longer cancel.
    if (t.center && t.sourceDType != "F32" && t.sourceDType != "F64")
      die(llvm::formatv("the plan centers '{0}', a {1} weight, which cannot "
                        "carry a mean-centering exactly",
                        t.source, t.sourceDType));
    Job job;
    job.out = {t.name, t.dtype, t.shape, 0};
    job.out.size = getByteWidth(*floatKind(t.dtype));
    for (int64_t d : t.shape)
      job.out.size *= d;
    job.fold = &t;
    job.copy = it->second; // The source, read by the fold.
    job.vector =
        resolveVector(t, axisView(t.sourceShape, t.axis).numK, sources);
    written.insert(t.name);
    jobs.push_back(std::move(job));
  }
  for (const st::File &file : files)
    for (const st::TensorInfo &t : file.getTensors())
      if (!dropped.count(t.name) && !written.count(t.name)) {
        Job job;
        job.out = {t.name, t.dtype, t.shape, t.size()};
        job.copy = Source{&file, &t};
        jobs.push_back(std::move(job));
      }
  // Now, not when the model fails to load: the shard holding them was left
  // out (no plan entry reads it, so nothing above missed it).
  for (const std::string &name : plan->loads)
    if (!written.count(name) && !sources.count(name))
      die(llvm::formatv(
          "the program loads '{0}', which none of the input checkpoints "
          "hold ({1})",
          name,
          llvm::StringRef(name).contains(".flashnorm")
              ? "a tensor an earlier fold plan computes: was the IR folded "
                "before? Then give the checkpoint that plan made"
              : "a shard left out?"));

  // The layout, then the output file at full size.
  std::vector<st::OutputTensor> layout;
  for (const Job &job : jobs)
    layout.push_back(job.out);
  metadata["flashnorm"] =
      llvm::formatv("folded by flashnorm-fold-checkpoint: {0} tensor(s) "
                    "computed, {1} dropped",
                    plan->tensors.size(), plan->drop.size());
  std::vector<uint64_t> offsets;
  std::string header = st::layOut(layout, metadata, offsets);
  llvm::StringMap<uint64_t> offsetOf;
  for (auto [t, off] : llvm::zip(layout, offsets))
    offsetOf[t.name] = header.size() + off;
  uint64_t total = header.size();
  for (Job &job : jobs) {
    job.offset = offsetOf[job.out.name];
    if (__builtin_add_overflow(total, job.out.size, &total) ||
        total > static_cast<uint64_t>(INT64_MAX))
      die("the output would be larger than a file can be");
  }

  std::string pattern = output + ".tmp-XXXXXX";
  if (pattern.size() >= sizeof(tempPath))
    die("the output path is too long");
  // A file size limit must be an error, not a signal.
  ::signal(SIGXFSZ, SIG_IGN);
  std::strcpy(tempPath, pattern.c_str());
  int outFD = ::mkstemp(tempPath);
  if (outFD < 0) {
    tempPath[0] = 0;
    die(llvm::formatv("cannot create a file beside {0}: {1}", output.getValue(),
                      std::strerror(errno)));
  }
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    ::signal(sig, removeTempAndExit);
  // mkstemp makes 0600; a checkpoint gets what the umask gives new files.
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(outFD, 0666 & ~mask);
  // The full size, now: a file size limit fails here; and the space, now:
  // a full disk is an error before any work, not after most of it. (No
  // fallocate: like cp, let the file system place the blocks as they come.)
  if (::ftruncate(outFD, static_cast<off_t>(total)) != 0)
    die(llvm::formatv("cannot make {1} {0} bytes long: {2}", total,
                      output.getValue(), std::strerror(errno)));
  struct statvfs fs;
  if (::fstatvfs(outFD, &fs) == 0 &&
      static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize < total)
    die(llvm::formatv("no space left for {0}: it needs {1} bytes, the file "
                      "system has {2}",
                      output.getValue(), total,
                      static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize));
  writeAt(outFD, header.data(), header.size(), 0);

  // Largest first, so the last tensors to finish are small.
  llvm::sort(
      jobs, [](const Job &a, const Job &b) { return a.out.size > b.out.size; });
  unsigned numThreads = threads
                            ? threads.getValue()
                            : std::max(1u, std::thread::hardware_concurrency());
  std::atomic<size_t> next{0};
  auto work = [&] {
    std::vector<char> input, buffer;
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      const Job &job = jobs[i];
      if (job.fold)
        foldTensor(outFD, job, *job.copy, input, buffer);
      else
        copyTensor(outFD, *job.copy, job.offset);
    }
  };
  // Where the system refuses more threads (a process or memory limit, a
  // huge --jobs), the workers started so far do the work: slower, never
  // an abort with the temporary output left behind.
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::min<size_t>(numThreads, jobs.size()); ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error &) {
      break;
    }
  }
  work();
  for (std::thread &t : pool)
    t.join();

  if (::ftruncate(outFD, static_cast<off_t>(total)) != 0 || ::close(outFD) != 0)
    die(llvm::formatv("writing {0}: {1}", output.getValue(),
                      std::strerror(errno)));
  if (::rename(tempPath, output.c_str()) != 0)
    die(llvm::formatv("cannot rename the output into {0}: {1}",
                      output.getValue(), std::strerror(errno)));
  tempPath[0] = 0;
  llvm::outs() << llvm::formatv(
      "flashnorm-fold-checkpoint: wrote {0}: {1} tensors ({2} computed, {3} "
      "copied, {4} dropped), {5} bytes\n",
      output.getValue(), jobs.size(), plan->tensors.size(),
      jobs.size() - plan->tensors.size(), plan->drop.size(), total);
  return 0;
}
