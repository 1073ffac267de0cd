//===- OffloadStoreTest.cpp - The offload store's files -------------------===//
//
// The storage tier of mt3k.offload (runtime/src/OffloadStore.h) keeps one
// file per key under the offload directory: a run removes them when it ends,
// and a run that fails (fatal) removes this rank's files too, leaving other
// ranks' files and anything else in the directory alone.
//
//===----------------------------------------------------------------------===//

#include "OffloadStore.h"
#include "ratrain/runtime/Arena.h"
#include "ratrain/runtime/Dma.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/Token.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

using namespace ratrain::rt;

namespace {
/// A fresh directory under the system's temporary directory, removed with
/// everything in it at the end of the test.
class TempDir {
public:
  TempDir() {
    llvm::SmallString<128> path;
    EXPECT_FALSE(
        llvm::sys::fs::createUniqueDirectory("ratrain-offload-test", path));
    root = std::string(path);
  }
  ~TempDir() { llvm::sys::fs::remove_directories(root); }
  std::string root;
};

/// The names of the entries of `dir`, sorted; empty when it does not exist.
std::vector<std::string> entries(const std::string &dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec))
    names.push_back(std::string(llvm::sys::path::filename(it->path())));
  std::sort(names.begin(), names.end());
  return names;
}

void touch(const std::string &path) { std::ofstream(path) << "x"; }

/// Offloads two keys of rank `rank` to the storage tier of `dir`; fails
/// with "a step failed" when `failing`, otherwise destroys the store.
void offloadTwoKeys(const std::string &dir, int rank, bool failing) {
  TokenPool pool(8);
  DmaEngine dma(pool, 0); // Copies complete inside the calls.
  auto ddr = Arena::create(MemorySpace::DDR, 4096);
  if (!ddr)
    fatal("no arena");
  OffloadStore store(dma, dir, rank);
  store.offload((*ddr)->buffer(0, 1024), StorageTier::Storage, "layer.0/m");
  store.offload((*ddr)->buffer(1024, 2048), StorageTier::Storage, "layer.0/v");
  if (entries(dir).size() < 2)
    fatal("the keys are not files");
  if (failing)
    fatal("a step failed");
}
} // namespace

TEST(OffloadStore, ARunRemovesItsFilesAndTheDirectoryItCreated) {
  TempDir tmp;
  std::string dir = tmp.root + "/offload";
  offloadTwoKeys(dir, 0, /*failing=*/false);
  EXPECT_FALSE(llvm::sys::fs::exists(dir));
}

TEST(OffloadStore, AFailedRunRemovesItsFilesAndTheDirectoryItCreated) {
  TempDir tmp;
  std::string dir = tmp.root + "/offload";
  EXPECT_EXIT(offloadTwoKeys(dir, 0, /*failing=*/true),
              testing::ExitedWithCode(kFatalExitCode), "a step failed");
  EXPECT_FALSE(llvm::sys::fs::exists(dir)) << entries(dir).size();
}

TEST(OffloadStore, AFailedRunLeavesOtherRanksFilesAndOtherFiles) {
  TempDir tmp;
  // A directory the ranks share (RATRAIN_OFFLOAD_DIR), with another rank's
  // file and a file that is not the store's.
  std::string dir = tmp.root;
  touch(dir + "/rank1-layer_0_m-0123456789abcdef.bin");
  touch(dir + "/notes.txt");
  EXPECT_EXIT(offloadTwoKeys(dir, 0, /*failing=*/true),
              testing::ExitedWithCode(kFatalExitCode), "a step failed");
  EXPECT_EQ(entries(dir),
            (std::vector<std::string>{"notes.txt",
                                      "rank1-layer_0_m-0123456789abcdef.bin"}));
}
