//===- Safetensors.h - Read and lay out safetensors checkpoints -*- C++ -*-===//
//
// The checkpoint format Hugging Face models ship in: an 8-byte little-endian
// header length N, N bytes of JSON (`{"name": {"dtype", "shape",
// "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}`), then
// the tensors' bytes, offsets relative to the end of the header. The reader
// validates everything a corrupt or truncated file can get wrong before a
// byte of data is trusted (header size, JSON, dtypes, shapes against byte
// counts, offsets inside the file, no two tensors overlapping), so callers
// can index the data blindly. The layout helper writes headers that strict
// readers accept: tensors contiguous, no holes, header padded with spaces
// so the data starts 8-byte aligned, widest element types first so every
// tensor is aligned to its element size.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_UTILS_SAFETENSORS_H
#define FLASHNORM_UTILS_SAFETENSORS_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mlir::flashnorm::safetensors {

/// Bytes per element of a safetensors dtype name ("F32", "BF16", ...), or 0
/// for a name this reader does not know.
size_t getDTypeSize(llvm::StringRef dtype);

/// Whether a tensor of `shape` and `width`-byte elements can be indexed in
/// int64 byte offsets whatever its zero dimensions hide: the product of its
/// dimensions, each taken as at least 1, times `width` fits. (A [2^62, 0]
/// tensor holds no bytes, but the loops over its outer dimension and the
/// per-column sums of a fold do not know that.)
bool isAddressable(llvm::ArrayRef<int64_t> shape, size_t width);

/// Parses JSON from a file (a checkpoint's header, a fold plan), first
/// checking that it nests at most 64 deep: the recursive parser would
/// otherwise run out of stack on a 100 KB file of brackets.
llvm::Expected<llvm::json::Value> parseJSON(llvm::StringRef text);

/// The safetensors dtype of an MLIR element type spelled as in the IR
/// ("f32" -> "F32", "bf16" -> "BF16", "i8" -> "I8"), or "" if none.
std::string getDTypeForElementName(llvm::StringRef element);

struct TensorInfo {
  std::string name;
  std::string dtype;
  llvm::SmallVector<int64_t> shape;
  /// Byte range in the data section (after the header).
  uint64_t begin = 0, end = 0;

  uint64_t size() const { return end - begin; }
  int64_t getNumElements() const;
};

/// One checkpoint file, its header validated. With `map`, the whole file is
/// mapped read-only (copy on write) and `getData` points into it.
class File {
public:
  static llvm::Expected<File> open(llvm::StringRef path, bool map);
  File(File &&other);
  File &operator=(File &&other) = delete;
  File(const File &) = delete;
  ~File();

  const std::string &getPath() const { return path; }
  int getFD() const { return fd; }
  uint64_t getFileSize() const { return fileSize; }
  /// File offset of the data section.
  uint64_t getDataStart() const { return dataStart; }
  const std::vector<TensorInfo> &getTensors() const { return tensors; }
  const TensorInfo *lookup(llvm::StringRef name) const;
  const std::map<std::string, std::string> &getMetadata() const {
    return metadata;
  }
  /// The bytes of `t` (only for files opened with `map`).
  const char *getData(const TensorInfo &t) const {
    return mapping + dataStart + t.begin;
  }
  /// The mapping, for callers that stream a tensor and release what they
  /// have read (madvise); null unless opened with `map`.
  char *getMapping() const { return mapping; }

private:
  File() = default;
  std::string path;
  int fd = -1;
  uint64_t fileSize = 0, dataStart = 0;
  char *mapping = nullptr;
  std::vector<TensorInfo> tensors;
  llvm::StringMap<size_t> index;
  std::map<std::string, std::string> metadata;
};

/// A tensor to be written: name, dtype, shape and byte size.
struct OutputTensor {
  std::string name;
  std::string dtype;
  llvm::SmallVector<int64_t> shape;
  uint64_t size = 0;
};

/// The header of a file holding `tensors` (reordered: widest dtype first,
/// then by name) with `metadata`; sets every tensor's begin offset in
/// `offsets` (same order as the reordered `tensors`) and returns the full
/// header bytes (length prefix included).
std::string layOut(std::vector<OutputTensor> &tensors,
                   const std::map<std::string, std::string> &metadata,
                   std::vector<uint64_t> &offsets);

} // namespace mlir::flashnorm::safetensors

#endif
