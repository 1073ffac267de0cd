//===- TestUtil.h - Helpers of the runtime unit tests -----------*- C++ -*-===//

#ifndef RATRAIN_TEST_UNIT_RUNTIME_TESTUTIL_H
#define RATRAIN_TEST_UNIT_RUNTIME_TESTUTIL_H

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <string>

namespace ratrain::rt::test {

/// A fresh temporary directory, removed with its contents at scope exit.
class TempDir {
public:
  TempDir() {
    llvm::SmallString<128> path;
    std::error_code ec =
        llvm::sys::fs::createUniqueDirectory("ratrain-runtime-test", path);
    EXPECT_FALSE(ec) << ec.message();
    root = std::string(path);
  }
  ~TempDir() { llvm::sys::fs::remove_directories(root); }
  std::string path(llvm::StringRef name) const {
    llvm::SmallString<256> result(root);
    llvm::sys::path::append(result, name);
    return std::string(result);
  }
  const std::string &str() const { return root; }

private:
  std::string root;
};

/// The message of an llvm::Error, or "" on success.
inline std::string errorText(llvm::Error error) {
  return error ? llvm::toString(std::move(error)) : std::string();
}

/// The files in `directory` (names only, sorted).
std::vector<std::string> listDirectory(llvm::StringRef directory);

} // namespace ratrain::rt::test

inline std::vector<std::string>
ratrain::rt::test::listDirectory(llvm::StringRef directory) {
  std::vector<std::string> names;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(directory, ec), end;
       it != end && !ec; it.increment(ec))
    names.push_back(llvm::sys::path::filename(it->path()).str());
  std::sort(names.begin(), names.end());
  return names;
}

#endif // RATRAIN_TEST_UNIT_RUNTIME_TESTUTIL_H
