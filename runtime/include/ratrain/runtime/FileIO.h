//===- FileIO.h - Atomic file writes ----------------------------*- C++ -*-===//
//
// Every file the runtime writes (token files, checkpoint shards, indexes) goes
// through AtomicFile: the data is written to a temporary file in the same
// directory, fsync'ed, renamed over the target and the directory fsync'ed.
// A failure at any point removes the temporary file and leaves an existing
// target untouched, so no reader ever sees a half-written file. A target
// that exists and is not a regular file (a symlink, a directory, a device
// node, a fifo) is refused, at create() and again before the rename: the
// rename would replace it.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_FILEIO_H
#define RATRAIN_RUNTIME_FILEIO_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>

namespace ratrain::rt {

class AtomicFile {
public:
  /// Creates a temporary file next to `path`; fails when `path` exists and
  /// is not a regular file.
  static llvm::Expected<AtomicFile> create(llvm::StringRef path);
  AtomicFile(AtomicFile &&other);
  AtomicFile &operator=(AtomicFile &&) = delete;
  AtomicFile(const AtomicFile &) = delete;
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFile();

  llvm::Error write(const void *data, uint64_t bytes);
  llvm::Error write(llvm::StringRef text) {
    return write(text.data(), text.size());
  }
  /// fsync, rename over the target, fsync the directory.
  llvm::Error commit();

  const std::string &path() const { return target; }
  const std::string &temporaryPath() const { return temporary; }
  uint64_t bytesWritten() const { return written; }

  /// Test hook: every AtomicFile created afterwards fails its write once it
  /// has written `bytes` bytes, as a full disk would. UINT64_MAX disables.
  static void setWriteFailureAfterForTesting(uint64_t bytes);

private:
  AtomicFile() = default;
  std::string target;
  std::string temporary;
  int fd = -1;
  uint64_t written = 0;
  uint64_t failAfter = UINT64_MAX;
  bool committed = false;
};

/// Writes `contents` to `path` atomically.
llvm::Error writeFileAtomically(llvm::StringRef path, llvm::StringRef contents);

/// `directory`/`name`.
std::string joinPath(llvm::StringRef directory, llvm::StringRef name);

/// Reads and parses a JSON file (depth-limited, ratrain/Model/JSON.h);
/// errors name the file ("cannot read", "corrupt JSON").
llvm::Expected<llvm::json::Value> readJSONFile(llvm::StringRef path);

/// fsyncs a directory (after renames into it).
llvm::Error syncDirectory(llvm::StringRef directory);

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_FILEIO_H
