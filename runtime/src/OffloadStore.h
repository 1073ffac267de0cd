//===- OffloadStore.h - Host and storage tiers of mt3k.offload --*- C++ -*-===//
//
// Private to the runtime. Offloaded bytes live outside the arenas: in host
// buffers allocated on a key's first offload and reused afterwards, or in one
// file per key under the offload directory. Copies run on the DMA helper
// threads.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_SRC_OFFLOADSTORE_H
#define RATRAIN_RUNTIME_SRC_OFFLOADSTORE_H

#include "HugePages.h"
#include "ratrain/runtime/Runtime.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ratrain::rt {

class OffloadStore {
public:
  /// `hostCacheBytes`: storage-tier keys that fit in this many bytes of
  /// host memory (first come, first served, whole keys) stay in memory
  /// instead of going to files (RuntimeOptions::offloadHostCacheBytes).
  OffloadStore(DmaEngine &dma, std::string directory, int rank,
               uint64_t hostCacheBytes = 0);
  ~OffloadStore();

  Token offload(Buffer src, StorageTier tier, llvm::StringRef key);
  Token reload(Buffer dst, StorageTier tier, llvm::StringRef key);
  /// The host copy under `key` (see Runtime::offloadedCopy); for the
  /// storage tier a staging copy of the key's file (or of its pieces'
  /// files), allocated on the first call, that checkpoints read and write.
  Buffer copyOf(StorageTier tier, llvm::StringRef key);
  /// The last transfer of every storage-tier key (to wait for before the
  /// files are read or written outside the DMA threads).
  std::vector<Token> storageTransfers();
  /// Reads each staged key's file(s) into its staging copy (before a
  /// checkpoint is saved), or writes the staging copy into them (after one
  /// is loaded). Blocking; the files' transfers must have completed.
  void readStaging();
  void writeStaging();

private:
  struct Entry {
    HugePageBlock host;
    uint64_t bytes = 0;
    bool written = false; ///< Storage tier: the file exists.
    /// Offloads of pieces still copying into `host`: the copy may only grow
    /// (be reallocated) once they are done. The prologue offloads the pieces
    /// of a parent one after another without waiting in between when
    /// nothing else orders them (their DDR buffers and keys differ).
    std::atomic<int> piecesInFlight{0};
    /// Storage tier: the last offload or reload of the key.
    Token last;
    /// Storage tier: the key is in the host cache (`host` holds it, no
    /// file).
    bool cached = false;
  };
  /// A storage-tier key's host staging copy for checkpoints.
  struct Staging {
    std::unique_ptr<std::byte[]> data;
    uint64_t bytes = 0;
  };
  /// Reads (or writes) the file(s) of staged `key` from (into) `staging`.
  void transferStaging(const std::string &key, Staging &staging, bool write);
  Entry &entry(StorageTier tier, llvm::StringRef key);
  /// The entry of a key transferred whole: an offload fixes its size, a
  /// reload must find one of the same size. Errors are fatal.
  Entry &checkedEntry(StorageTier tier, llvm::StringRef key, uint64_t bytes,
                      bool offloading);
  /// A host-tier key `<parent>@<byte offset>` names bytes of `<parent>`'s
  /// copy (a piece of a state streamed in chunks; the copy grows to hold
  /// it): the parent and the offset.
  static std::optional<std::pair<llvm::StringRef, uint64_t>>
  pieceOf(llvm::StringRef key);
  /// Where `bytes` bytes under a host-tier `key` live: a piece in its
  /// parent's copy, or the key's own copy (allocated on its first offload).
  /// `inFlight` (when not null) receives the parent's count of pieces in
  /// flight, which an offload increments (here) and its copy decrements.
  std::byte *hostBytes(llvm::StringRef key, uint64_t bytes, bool offloading,
                       std::atomic<int> **inFlight = nullptr);
  std::string fileOf(llvm::StringRef key) const;
  /// After a fatal error (see addFatalCleanup): removes this rank's files
  /// from the directory by their names, without the maps (another thread
  /// may be changing them), and the directory where this store created it
  /// and it is left empty.
  void removeFilesOnFatal() const;

  DmaEngine &dma;
  std::string directory;
  int rank;
  std::atomic<bool> createdDirectory{false};
  uint64_t fatalCleanup = 0;
  std::mutex mutex;
  std::map<std::string, Entry> host, storage;
  std::map<std::string, Staging> staging;
  uint64_t hostCacheBytes = 0, hostCacheUsed = 0;
};

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_SRC_OFFLOADSTORE_H
