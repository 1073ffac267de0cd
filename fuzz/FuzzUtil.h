//===- FuzzUtil.h - helpers shared by the fuzz targets ----------*- C++ -*-===//
//
// The readers under test take a path (they map the file), so a target writes
// each input to one scratch file per process first.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_FUZZ_FUZZUTIL_H
#define RATRAIN_FUZZ_FUZZUTIL_H

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <string>

namespace ratrain::fuzz {

/// Writes `data` to this process's scratch file `<tmp>/ratrain-fuzz-*.<ext>`
/// (created once, removed at exit) and returns its path.
inline const std::string &writeScratchFile(const uint8_t *data, size_t size,
                                           llvm::StringRef ext) {
  static std::string path = [&] {
    llvm::SmallString<128> tmp;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("ratrain-fuzz", ext, tmp)) {
      llvm::errs() << "fuzz: cannot create a scratch file: " << ec.message()
                   << "\n";
      std::abort();
    }
    static llvm::FileRemover remover(tmp);
    return std::string(tmp);
  }();
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    llvm::errs() << "fuzz: cannot write " << path << ": " << ec.message()
                 << "\n";
    std::abort();
  }
  os.write(reinterpret_cast<const char *>(data), size);
  os.close();
  if (os.has_error())
    std::abort();
  return path;
}

inline llvm::StringRef asText(const uint8_t *data, size_t size) {
  return llvm::StringRef(reinterpret_cast<const char *>(data), size);
}

} // namespace ratrain::fuzz

#endif // RATRAIN_FUZZ_FUZZUTIL_H
