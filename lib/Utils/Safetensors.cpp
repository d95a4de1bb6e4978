//===- Safetensors.cpp - Read and lay out safetensors checkpoints ---------===//

#include "flashnorm/Utils/Safetensors.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace llvm;
using namespace mlir::flashnorm::safetensors;

/// The format caps the header at 100 MB; a larger length is corruption.
static constexpr uint64_t kMaxHeader = 100'000'000;

size_t mlir::flashnorm::safetensors::getDTypeSize(StringRef dtype) {
  return StringSwitch<size_t>(dtype)
      .Cases({"F64", "I64", "U64"}, 8)
      .Cases({"F32", "I32", "U32"}, 4)
      .Cases({"F16", "BF16", "I16", "U16"}, 2)
      .Cases({"I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2"}, 1)
      .Default(0);
}

bool mlir::flashnorm::safetensors::isAddressable(ArrayRef<int64_t> shape,
                                                 size_t width) {
  uint64_t bytes = width;
  for (int64_t d : shape)
    if (d < 0 ||
        __builtin_mul_overflow(bytes, std::max<uint64_t>(d, 1), &bytes))
      return false;
  return bytes <= static_cast<uint64_t>(INT64_MAX);
}

Expected<json::Value> mlir::flashnorm::safetensors::parseJSON(StringRef text) {
  constexpr unsigned kMaxDepth = 64;
  unsigned depth = 0;
  bool inString = false, escaped = false;
  for (char c : text) {
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"')
      inString = true;
    else if ((c == '[' || c == '{') && ++depth > kMaxDepth)
      return createStringError(
          inconvertibleErrorCode(),
          formatv("nested more than {0} deep", kMaxDepth).str());
    else if ((c == ']' || c == '}') && depth)
      --depth;
  }
  return json::parse(text);
}

std::string
mlir::flashnorm::safetensors::getDTypeForElementName(StringRef element) {
  return StringSwitch<std::string>(element)
      .Case("f64", "F64")
      .Case("f32", "F32")
      .Case("f16", "F16")
      .Case("bf16", "BF16")
      .Case("i64", "I64")
      .Case("i32", "I32")
      .Case("i16", "I16")
      .Case("i8", "I8")
      .Case("ui8", "U8")
      .Case("i1", "BOOL")
      .Default("");
}

int64_t TensorInfo::getNumElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

static Error fail(StringRef path, const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), (path + ": " + msg).str());
}

/// Reads exactly `size` bytes at `offset`.
static bool readAt(int fd, char *buf, size_t size, uint64_t offset) {
  while (size) {
    ssize_t n = ::pread(fd, buf, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    buf += n;
    size -= n;
    offset += n;
  }
  return true;
}

/// A non-negative JSON integer.
static std::optional<uint64_t> getUnsigned(const json::Value &v) {
  if (std::optional<int64_t> i = v.getAsInteger(); i && *i >= 0)
    return static_cast<uint64_t>(*i);
  if (std::optional<uint64_t> u = v.getAsUINT64())
    return u;
  return std::nullopt;
}

Expected<File> File::open(StringRef path, bool map) {
  File file;
  file.path = path.str();
  file.fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0)
    return fail(path, std::strerror(errno));
  struct stat st;
  if (::fstat(file.fd, &st) != 0)
    return fail(path, std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return fail(path, "not a regular file");
  file.fileSize = static_cast<uint64_t>(st.st_size);

  char lengthBytes[8];
  if (file.fileSize < 8 || !readAt(file.fd, lengthBytes, 8, 0))
    return fail(path, "truncated: no 8-byte header length");
  uint64_t headerSize = support::endian::read64le(lengthBytes);
  if (headerSize > kMaxHeader)
    return fail(path, formatv("corrupt header: length {0} exceeds the "
                              "format's 100 MB limit",
                              headerSize));
  if (8 + headerSize > file.fileSize)
    return fail(path, formatv("truncated: the header needs {0} bytes, the "
                              "file has {1}",
                              8 + headerSize, file.fileSize));
  std::string header(headerSize, '\0');
  if (!readAt(file.fd, header.data(), headerSize, 8))
    return fail(path, "cannot read the header");
  file.dataStart = 8 + headerSize;
  uint64_t dataSize = file.fileSize - file.dataStart;

  Expected<json::Value> parsed = parseJSON(header);
  if (!parsed)
    return fail(path, "corrupt header: " + toString(parsed.takeError()));
  json::Object *root = parsed->getAsObject();
  if (!root)
    return fail(path, "corrupt header: not a JSON object");
  for (auto &[key, value] : *root) {
    std::string name = key.str();
    if (name == "__metadata__") {
      json::Object *meta = value.getAsObject();
      if (!meta)
        return fail(path, "corrupt header: __metadata__ is not an object");
      for (auto &[mk, mv] : *meta) {
        std::optional<StringRef> s = mv.getAsString();
        if (!s)
          return fail(path, "corrupt header: metadata '" + mk.str() +
                                "' is not a string");
        file.metadata[mk.str()] = s->str();
      }
      continue;
    }
    json::Object *entry = value.getAsObject();
    auto bad = [&](const Twine &what) {
      return fail(path, "corrupt header: tensor '" + name + "' " + what);
    };
    if (!entry)
      return bad("is not an object");
    TensorInfo t;
    t.name = name;
    std::optional<StringRef> dtype = entry->getString("dtype");
    if (!dtype)
      return bad("has no dtype");
    t.dtype = dtype->str();
    size_t width = getDTypeSize(t.dtype);
    if (!width)
      return bad("has unknown dtype '" + t.dtype + "'");
    json::Array *shape = entry->getArray("shape");
    json::Array *offsets = entry->getArray("data_offsets");
    if (!shape || !offsets || offsets->size() != 2)
      return bad("needs a shape and two data_offsets");
    uint64_t elements = 1;
    for (const json::Value &d : *shape) {
      std::optional<uint64_t> dim = getUnsigned(d);
      if (!dim || *dim > static_cast<uint64_t>(INT64_MAX) ||
          __builtin_mul_overflow(elements, *dim, &elements))
        return bad("has an invalid shape");
      t.shape.push_back(static_cast<int64_t>(*dim));
    }
    if (!isAddressable(t.shape, width))
      return bad("has a shape too large to index");
    std::optional<uint64_t> begin = getUnsigned((*offsets)[0]);
    std::optional<uint64_t> end = getUnsigned((*offsets)[1]);
    uint64_t bytes;
    if (!begin || !end || *begin > *end ||
        __builtin_mul_overflow(elements, width, &bytes))
      return bad("has invalid data_offsets");
    if (*end - *begin != bytes)
      return bad(formatv("holds {0} bytes, its shape and dtype need {1}",
                         *end - *begin, bytes));
    if (*end > dataSize)
      return fail(path, formatv("truncated: tensor '{0}' ends at byte {1} "
                                "of a {2}-byte data section",
                                name, *end, dataSize));
    t.begin = *begin;
    t.end = *end;
    file.tensors.push_back(std::move(t));
  }
  llvm::sort(file.tensors, [](const TensorInfo &a, const TensorInfo &b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  for (size_t i = 1; i < file.tensors.size(); ++i)
    if (file.tensors[i].begin < file.tensors[i - 1].end)
      return fail(path, "corrupt header: tensors '" + file.tensors[i - 1].name +
                            "' and '" + file.tensors[i].name + "' overlap");
  // The tensors tile the data section, as strict readers require: a gap
  // is also what a name given twice leaves (the JSON object keeps the
  // last), whose first tensor would silently vanish.
  uint64_t covered = 0;
  for (const TensorInfo &t : file.tensors) {
    if (t.begin != covered)
      break;
    covered = t.end;
  }
  if (covered != dataSize)
    return fail(path, formatv("corrupt header: data bytes from {0} belong to "
                              "no tensor (a name given twice, or a hole)",
                              covered));
  for (auto [i, t] : llvm::enumerate(file.tensors))
    file.index[t.name] = i;

  if (map && file.fileSize) {
    void *p = ::mmap(nullptr, file.fileSize, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE, file.fd, 0);
    if (p == MAP_FAILED)
      return fail(path, Twine("cannot map: ") + std::strerror(errno));
    file.mapping = static_cast<char *>(p);
  }
  return file;
}

File::File(File &&o)
    : path(std::move(o.path)), fd(o.fd), fileSize(o.fileSize),
      dataStart(o.dataStart), mapping(o.mapping), tensors(std::move(o.tensors)),
      index(std::move(o.index)), metadata(std::move(o.metadata)) {
  o.fd = -1;
  o.mapping = nullptr;
}

File::~File() {
  if (mapping)
    ::munmap(mapping, fileSize);
  if (fd >= 0)
    ::close(fd);
}

const TensorInfo *File::lookup(StringRef name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &tensors[it->second];
}

std::string mlir::flashnorm::safetensors::layOut(
    std::vector<OutputTensor> &tensors,
    const std::map<std::string, std::string> &metadata,
    std::vector<uint64_t> &offsets) {
  // Widest first keeps every tensor aligned to its element size in a data
  // section that has no padding between tensors.
  llvm::stable_sort(tensors, [](const OutputTensor &a, const OutputTensor &b) {
    size_t wa = getDTypeSize(a.dtype), wb = getDTypeSize(b.dtype);
    return wa != wb ? wa > wb : a.name < b.name;
  });
  offsets.clear();
  std::string json;
  raw_string_ostream os(json);
  json::OStream out(os);
  uint64_t offset = 0;
  out.object([&] {
    if (!metadata.empty())
      out.attributeObject("__metadata__", [&] {
        for (const auto &[k, v] : metadata)
          out.attribute(k, v);
      });
    for (const OutputTensor &t : tensors) {
      offsets.push_back(offset);
      out.attributeObject(t.name, [&] {
        out.attribute("dtype", t.dtype);
        out.attributeArray("shape", [&] {
          for (int64_t d : t.shape)
            out.value(d);
        });
        out.attributeArray("data_offsets", [&] {
          out.value(offset);
          out.value(offset + t.size);
        });
      });
      offset += t.size;
    }
  });
  os.flush();
  // Spaces after the JSON so that the data section starts 8-byte aligned.
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string header(8, '\0');
  support::endian::write64le(header.data(), json.size());
  return header + json;
}
