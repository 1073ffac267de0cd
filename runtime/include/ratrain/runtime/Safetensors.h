//===- Safetensors.h - safetensors reader and writer ------------*- C++ -*-===//
//
// The format (https://github.com/huggingface/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON
//   {"__metadata__": {"k": "v", ...},
//    "<name>": {"dtype": "F32", "shape": [d0, d1], "data_offsets": [b, e]},
//    ...}
// padded with spaces to a multiple of 8, then the raw little-endian data;
// offsets are relative to the start of the data and must cover it without
// holes. The writer also records an xxh3-64 checksum of every tensor in the
// metadata ("ratrain.xxh3.<name>"), which the reader verifies, so flipped bits
// in the data are reported, not trained on.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_SAFETENSORS_H
#define RATRAIN_RUNTIME_SAFETENSORS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ratrain::rt {

/// Bytes per element of a safetensors dtype ("F32", "BF16", ...), 0 if
/// unknown.
unsigned getSafetensorsDTypeBytes(llvm::StringRef dtype);

/// Metadata key of a tensor's checksum.
std::string checksumKey(llvm::StringRef tensorName);

struct TensorInfo {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0; ///< Offset of the data, relative to the data section.
  uint64_t end = 0;
  uint64_t numElements() const;
};

/// "[a, b, c]".
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// Collects tensors (by pointer: the data must stay valid until write()) and
/// writes them in insertion order, atomically.
class SafetensorsWriter {
public:
  /// `bytes` must equal numel(shape) x dtype size; a mismatch, an unknown
  /// dtype or a repeated name is reported by write().
  void add(llvm::StringRef name, llvm::StringRef dtype,
           llvm::ArrayRef<int64_t> shape, const void *data, uint64_t bytes);
  void setMetadata(llvm::StringRef key, llvm::StringRef value);
  /// Writes through an AtomicFile: an existing file at `path` is replaced
  /// only when everything was written and synced.
  llvm::Error write(llvm::StringRef path) const;
  /// Total bytes of tensor data.
  uint64_t dataBytes() const;

private:
  struct Entry {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;
    const void *data;
    uint64_t bytes;
  };
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
};

/// A validated safetensors file, mapped read-only.
class SafetensorsFile {
public:
  /// Validates the header (size, JSON, dtypes, shapes, offsets covering the
  /// data exactly). Errors name the file and, where it applies, the tensor.
  static llvm::Expected<SafetensorsFile> open(llvm::StringRef path);

  const std::string &path() const { return fileName; }
  const std::vector<TensorInfo> &tensors() const { return infos; }
  const TensorInfo *find(llvm::StringRef name) const;
  const std::map<std::string, std::string> &metadata() const { return meta; }
  /// The raw bytes of a tensor.
  llvm::StringRef data(const TensorInfo &info) const;

  /// Copies tensor `name` into `out` after checking that it exists, has
  /// `dtype` and `shape`, that `bytes` matches and that its checksum (when
  /// recorded) is right.
  llvm::Error read(llvm::StringRef name, llvm::StringRef dtype,
                   llvm::ArrayRef<int64_t> shape, void *out,
                   uint64_t bytes) const;

private:
  std::shared_ptr<llvm::MemoryBuffer> file;
  std::string fileName;
  uint64_t dataStart = 0;
  std::vector<TensorInfo> infos;
  std::map<std::string, size_t> byName;
  std::map<std::string, std::string> meta;
};

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_SAFETENSORS_H
