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

#include "ratrain/runtime/Runtime.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace ratrain::rt {

class OffloadStore {
public:
  OffloadStore(DmaEngine &dma, std::string directory, int rank);
  ~OffloadStore();

  Token offload(Buffer src, StorageTier tier, llvm::StringRef key);
  Token reload(Buffer dst, StorageTier tier, llvm::StringRef key);
  /// The host copy under `key` (see Runtime::offloadedCopy).
  Buffer copyOf(StorageTier tier, llvm::StringRef key);

private:
  struct Entry {
    std::unique_ptr<std::byte[]> host;
    uint64_t bytes = 0;
    bool written = false; ///< Storage tier: the file exists.
  };
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
  std::byte *hostBytes(llvm::StringRef key, uint64_t bytes, bool offloading);
  std::string fileOf(llvm::StringRef key) const;

  DmaEngine &dma;
  std::string directory;
  int rank;
  bool createdDirectory = false;
  std::mutex mutex;
  std::map<std::string, Entry> host, storage;
};

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_SRC_OFFLOADSTORE_H
