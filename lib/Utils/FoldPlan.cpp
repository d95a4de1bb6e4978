//===- FoldPlan.cpp - Folds recorded for weights in a checkpoint ----------===//

#include "flashnorm/Utils/FoldPlan.h"
#include "flashnorm/Utils/Safetensors.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

using namespace llvm;
using namespace mlir::flashnorm;

static constexpr StringLiteral kFormat = "flashnorm-fold-plan";
static constexpr int64_t kVersion = 1;

std::string FoldPlan::toJSON() const {
  std::string text;
  raw_string_ostream os(text);
  json::OStream out(os, /*IndentSize=*/2);
  auto shape = [&](StringRef key, ArrayRef<int64_t> dims) {
    out.attributeArray(key, [&] {
      for (int64_t d : dims)
        out.value(d);
    });
  };
  out.object([&] {
    out.attribute("format", kFormat);
    out.attribute("version", kVersion);
    out.attributeArray("tensors", [&] {
      for (const PlanTensor &t : tensors)
        out.object([&] {
          out.attribute("name", t.name);
          out.attribute("op", t.op == PlanTensor::Op::Scale ? "scale"
                              : t.op == PlanTensor::Op::Contract
                                  ? "contract"
                                  : "column_sums");
          out.attribute("source", t.source);
          out.attribute("source_dtype", t.sourceDType);
          shape("source_shape", t.sourceShape);
          out.attribute("dtype", t.dtype);
          shape("shape", t.shape);
          out.attribute("axis", t.axis);
          if (t.op == PlanTensor::Op::Scale)
            out.attribute("center", t.center);
          out.attributeObject("vector", [&] {
            if (!t.vector.tensor.empty()) {
              out.attribute("tensor", t.vector.tensor);
              out.attribute("scale", t.vector.scale);
              out.attribute("offset", t.vector.offset);
              return;
            }
            out.attributeArray("values", [&] {
              for (double v : t.vector.values)
                out.value(v);
            });
          });
        });
    });
    out.attributeArray("drop", [&] {
      for (const std::string &name : drop)
        out.value(name);
    });
    out.attributeArray("loads", [&] {
      for (const std::string &name : loads)
        out.value(name);
    });
  });
  os << "\n";
  return text;
}

namespace {
/// Reads one plan, collecting the first error with where it is.
class Reader {
public:
  std::optional<std::string> error;

  void fail(const Twine &where, const Twine &what) {
    if (!error)
      error = (where + ": " + what).str();
  }
  std::string string(const json::Object &o, StringRef key, const Twine &at) {
    std::optional<StringRef> s = o.getString(key);
    if (!s || s->empty())
      fail(at, "needs a non-empty string \"" + key + "\"");
    return s ? s->str() : "";
  }
  SmallVector<int64_t> dims(const json::Object &o, StringRef key,
                            const Twine &at) {
    SmallVector<int64_t> result;
    const json::Array *a = o.getArray(key);
    if (!a) {
      fail(at, "needs an array \"" + key + "\"");
      return result;
    }
    for (const json::Value &v : *a) {
      std::optional<int64_t> d = v.getAsInteger();
      if (!d || *d < 0)
        fail(at, "\"" + key +
                     "\" holds a dimension that is not a "
                     "non-negative integer");
      result.push_back(d.value_or(0));
    }
    return result;
  }
  double number(const json::Object &o, StringRef key, double dflt,
                const Twine &at) {
    const json::Value *v = o.get(key);
    if (!v)
      return dflt;
    std::optional<double> d = v->getAsNumber();
    if (!d || !std::isfinite(*d))
      fail(at, "\"" + key + "\" is not a finite number");
    return d.value_or(dflt);
  }
};
} // namespace

Expected<FoldPlan> FoldPlan::fromJSON(StringRef text) {
  auto bad = [](const Twine &msg) {
    return createStringError(inconvertibleErrorCode(), msg.str());
  };
  Expected<json::Value> parsed = safetensors::parseJSON(text);
  if (!parsed)
    return bad("not JSON: " + toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root || root->getString("format") != std::optional<StringRef>(kFormat))
    return bad("not a flashnorm fold plan (\"format\" is not \"" + kFormat +
               "\")");
  if (root->getInteger("version") != kVersion)
    return bad(formatv("plan version is not {0}", kVersion));
  const json::Array *tensors = root->getArray("tensors");
  if (!tensors)
    return bad("the plan has no \"tensors\" array");

  Reader r;
  FoldPlan plan;
  StringSet<> names;
  for (auto [i, v] : llvm::enumerate(*tensors)) {
    std::string at = formatv("tensors[{0}]", i);
    const json::Object *o = v.getAsObject();
    if (!o)
      return bad(at + ": not an object");
    PlanTensor t;
    t.name = r.string(*o, "name", at);
    if (!t.name.empty())
      at += " ('" + t.name + "')";
    if (t.name == "__metadata__")
      r.fail(at, "\"__metadata__\" is the checkpoint's metadata, not a "
                 "tensor name");
    std::string op = r.string(*o, "op", at);
    if (op == "scale")
      t.op = PlanTensor::Op::Scale;
    else if (op == "contract")
      t.op = PlanTensor::Op::Contract;
    else if (op == "column_sums")
      t.op = PlanTensor::Op::ColumnSums;
    else
      r.fail(at, "\"op\" is '" + op +
                     "', not 'scale', 'contract' or 'column_sums'");
    t.source = r.string(*o, "source", at);
    t.sourceDType = r.string(*o, "source_dtype", at);
    t.sourceShape = r.dims(*o, "source_shape", at);
    t.dtype = r.string(*o, "dtype", at);
    t.shape = r.dims(*o, "shape", at);
    for (StringRef dtype : {StringRef(t.dtype), StringRef(t.sourceDType)})
      if (!dtype.empty() && dtype != "F16" && dtype != "BF16" &&
          dtype != "F32" && dtype != "F64")
        r.fail(at, "dtype '" + dtype + "' is not F16, BF16, F32 or F64");
    std::optional<int64_t> axis = o->getInteger("axis");
    if (!axis || *axis < 0 ||
        *axis >= static_cast<int64_t>(t.sourceShape.size()))
      r.fail(at, "\"axis\" is not a dimension of the source");
    t.axis = axis.value_or(0);
    if (const json::Value *center = o->get("center")) {
      std::optional<bool> b = center->getAsBoolean();
      if (!b)
        r.fail(at, "\"center\" is not true or false");
      else if (*b && t.op == PlanTensor::Op::Contract)
        r.fail(at, "a contraction (a folded bias) is not centered");
      else if (*b && t.op == PlanTensor::Op::ColumnSums)
        r.fail(at, "column sums are of the uncentered fold (a centered "
                   "one's are zero)");
      t.center = b.value_or(false);
    }
    const json::Object *vec = o->getObject("vector");
    if (!vec) {
      r.fail(at, "needs a \"vector\" object");
    } else if (vec->get("tensor") && vec->get("values")) {
      r.fail(at + ".vector", "has both \"tensor\" and \"values\"");
    } else if (vec->get("tensor")) {
      t.vector.tensor = r.string(*vec, "tensor", at + ".vector");
      t.vector.scale = r.number(*vec, "scale", 1.0, at + ".vector");
      t.vector.offset = r.number(*vec, "offset", 0.0, at + ".vector");
    } else if (const json::Array *values = vec->getArray("values")) {
      for (const json::Value &x : *values) {
        std::optional<double> d = x.getAsNumber();
        if (!d || !std::isfinite(*d))
          r.fail(at + ".vector", "holds a value that is not a finite number");
        t.vector.values.push_back(d.value_or(0.0));
      }
    } else {
      r.fail(at + ".vector", "needs \"tensor\" or \"values\"");
    }
    if (r.error)
      return bad(*r.error);
    for (auto [shape, dtype] :
         {std::pair(&t.sourceShape, &t.sourceDType), {&t.shape, &t.dtype}})
      if (!safetensors::isAddressable(*shape,
                                      safetensors::getDTypeSize(*dtype)))
        return bad(at + ": a shape too large to index");
    // What the op makes of the source must be what the plan says it makes.
    int64_t k = t.sourceShape[t.axis];
    if (!t.vector.values.empty() &&
        static_cast<int64_t>(t.vector.values.size()) != k)
      return bad(at + formatv(": the vector has {0} values, the source's "
                              "axis {1} has {2}",
                              t.vector.values.size(), t.axis, k));
    SmallVector<int64_t> expected;
    if (t.op == PlanTensor::Op::Scale) {
      expected = t.sourceShape;
      if (t.dtype != t.sourceDType)
        return bad(at + ": a scaled tensor keeps its source's dtype");
    } else {
      int64_t n = 1;
      for (auto [d, size] : llvm::enumerate(t.sourceShape))
        if (static_cast<int64_t>(d) != t.axis)
          n *= size;
      expected = {n};
    }
    if (ArrayRef<int64_t>(expected) != ArrayRef<int64_t>(t.shape))
      return bad(at + ": its shape does not follow from the source's");
    if (!names.insert(t.name).second)
      return bad(at + ": the plan writes '" + t.name + "' twice");
    plan.tensors.push_back(std::move(t));
  }
  // Optional, but arrays where present: "loads" of another type would skip
  // the check that every tensor the program loads is in the checkpoint.
  for (StringRef key : {"drop", "loads"})
    if (root->get(key) && !root->getArray(key))
      return bad("\"" + key + "\" is not an array of tensor names");
  StringSet<> dropped;
  if (const json::Array *drop = root->getArray("drop"))
    for (const json::Value &v : *drop) {
      std::optional<StringRef> name = v.getAsString();
      if (!name)
        return bad("\"drop\" holds a value that is not a tensor name");
      plan.drop.push_back(name->str());
      dropped.insert(*name);
    }
  if (const json::Array *loads = root->getArray("loads"))
    for (const json::Value &v : *loads) {
      std::optional<StringRef> name = v.getAsString();
      if (!name)
        return bad("\"loads\" holds a value that is not a tensor name");
      if (dropped.contains(*name))
        return bad("the plan drops '" + *name + "', which it also loads");
      plan.loads.push_back(name->str());
    }
  return plan;
}

/// Whether this process has `path` open for writing as a regular file:
/// the tool's output file (mlir-opt's -o is open, and emptied, before the
/// passes run), or the file its standard output or error goes to. The plan
/// written there would be overwritten by what the tool writes after it.
static bool isOpenForWriting(StringRef path) {
#if defined(__unix__) || defined(__APPLE__)
  struct stat target;
  if (::stat(path.str().c_str(), &target) != 0 || !S_ISREG(target.st_mode))
    return false;
  long maxFD = std::min<long>(::sysconf(_SC_OPEN_MAX), 4096);
  for (int fd = 0; fd < maxFD; ++fd) {
    struct stat open;
    int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY || ::fstat(fd, &open) != 0)
      continue;
    if (open.st_dev == target.st_dev && open.st_ino == target.st_ino)
      return true;
  }
#endif
  return false;
}

std::string mlir::flashnorm::whyNotPlanDestination(StringRef path,
                                                   StringRef inputFile) {
  // (Written to the standard output, the plan would precede the IR there,
  // or closing it would close the IR's stream.)
  if (path == "-")
    return "'-' is not a file: name the file flashnorm-fold-checkpoint "
           "will read";
  bool same = false;
  if (!inputFile.empty() && !sys::fs::equivalent(path, inputFile, same) && same)
    return "it is the input file, which it would overwrite";
  if (isOpenForWriting(path))
    return "this process writes it (the output file, -o, or where the "
           "standard output or error goes), which would overwrite the plan";
  sys::fs::file_status status;
  if (sys::fs::status(path, status) || status.getSize() == 0 ||
      status.type() != sys::fs::file_type::regular_file)
    return ""; // Absent, empty (mktemp's) or not a file: the writer says.
  // A plan names its format first; the head of the file is enough.
  ErrorOr<std::unique_ptr<MemoryBuffer>> head =
      MemoryBuffer::getFileSlice(path, 256, 0);
  if (head && (*head)->getBuffer().contains(kFormat))
    return "";
  return "it exists and is not a fold plan, which it would overwrite";
}
