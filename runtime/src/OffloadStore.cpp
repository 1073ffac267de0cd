//===- OffloadStore.cpp - Host and storage tiers of mt3k.offload ----------===//

#include "OffloadStore.h"
#include "ratrain/runtime/Error.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

using namespace ratrain::rt;

namespace {
const char *tierName(StorageTier tier) {
  return tier == StorageTier::Host ? "host" : "storage";
}

void transfer(int fd, std::byte *data, uint64_t bytes, bool write,
              const std::string &path) {
  uint64_t done = 0;
  while (done < bytes) {
    size_t chunk = size_t(std::min<uint64_t>(bytes - done, uint64_t(1) << 30));
    ssize_t n = write ? ::pwrite(fd, data + done, chunk, off_t(done))
                      : ::pread(fd, data + done, chunk, off_t(done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      fatal(llvm::formatv("offload file {0}: {1} failed after {2} of {3} "
                          "bytes: {4}",
                          path, write ? "write" : "read", done, bytes,
                          n == 0 ? "unexpected end of file"
                                 : std::strerror(errno)));
    done += uint64_t(n);
  }
}
} // namespace

OffloadStore::OffloadStore(DmaEngine &dma, std::string directory, int rank,
                           uint64_t hostCacheBytes)
    : dma(dma), directory(std::move(directory)), rank(rank),
      hostCacheBytes(hostCacheBytes) {
  fatalCleanup = addFatalCleanup([this] { removeFilesOnFatal(); });
}

OffloadStore::~OffloadStore() {
  removeFatalCleanup(fatalCleanup);
  for (auto &[key, entry] : storage)
    if (entry.written)
      llvm::sys::fs::remove(fileOf(key));
  if (createdDirectory)
    llvm::sys::fs::remove(directory); // Only when empty.
}

void OffloadStore::removeFilesOnFatal() const {
  // fileOf's names: rank<R>-<readable key>-<hash>.bin.
  std::string prefix = llvm::formatv("rank{0}-", rank).str();
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(directory, ec), end;
       !ec && it != end; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (name.starts_with(prefix) && name.ends_with(".bin"))
      llvm::sys::fs::remove(it->path());
  }
  if (createdDirectory)
    llvm::sys::fs::remove(directory); // Only when empty.
}

std::string OffloadStore::fileOf(llvm::StringRef key) const {
  // Keys are free-form: name the file by a hash, keep a readable prefix.
  std::string readable;
  for (char c : key.take_front(48))
    readable.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return llvm::formatv("{0}/rank{1}-{2}-{3:x16}.bin", directory, rank, readable,
                       llvm::xxh3_64bits(key))
      .str();
}

OffloadStore::Entry &OffloadStore::entry(StorageTier tier,
                                         llvm::StringRef key) {
  std::lock_guard<std::mutex> lock(mutex);
  return (tier == StorageTier::Host ? host : storage)[key.str()];
}

std::optional<std::pair<llvm::StringRef, uint64_t>>
OffloadStore::pieceOf(llvm::StringRef key) {
  auto [parent, offset] = key.rsplit('@');
  uint64_t value = 0;
  if (parent.empty() || offset.empty() || offset.getAsInteger(10, value))
    return std::nullopt;
  return std::make_pair(parent, value);
}

OffloadStore::Entry &OffloadStore::checkedEntry(StorageTier tier,
                                                llvm::StringRef key,
                                                uint64_t bytes,
                                                bool offloading) {
  Entry &e = entry(tier, key);
  if (offloading) {
    if (e.bytes != 0 && e.bytes != bytes)
      fatal(llvm::formatv("offload of '{0}' to {1}: {2} bytes, but the key "
                          "held {3} bytes before",
                          key, tierName(tier), bytes, e.bytes));
    e.bytes = bytes;
    return e;
  }
  if (e.bytes == 0 || (tier == StorageTier::Host && !e.host) ||
      (tier == StorageTier::Storage && !e.written && !e.cached))
    fatal(llvm::formatv("reload of '{0}' from {1}: nothing was offloaded "
                        "under that key",
                        key, tierName(tier)));
  if (e.bytes != bytes)
    fatal(llvm::formatv("reload of '{0}' from {1}: {2} bytes were offloaded, "
                        "the destination holds {3}",
                        key, tierName(tier), e.bytes, bytes));
  return e;
}

std::byte *OffloadStore::hostBytes(llvm::StringRef key, uint64_t bytes,
                                   bool offloading,
                                   std::atomic<int> **inFlight) {
  if (auto piece = pieceOf(key)) {
    auto [parent, offset] = *piece;
    std::lock_guard<std::mutex> lock(mutex);
    Entry &e = host[parent.str()];
    uint64_t end = offset + bytes;
    if (e.bytes < end) {
      if (!offloading)
        fatal(llvm::formatv("reload of '{0}' from host: {1} bytes at {2} of "
                            "'{3}', which holds {4}",
                            key, bytes, offset, parent, e.bytes));
      // Grows (only in the prologue). Earlier pieces may still be copying
      // into the old copy: they finish first (they never take the mutex).
      while (e.piecesInFlight.load(std::memory_order_acquire) > 0)
        std::this_thread::yield();
      HugePageBlock grown(end);
      if (e.host)
        std::memcpy(grown.get(), e.host.get(), e.bytes);
      e.host = std::move(grown);
      e.bytes = end;
    }
    if (offloading && inFlight) {
      e.piecesInFlight.fetch_add(1, std::memory_order_relaxed);
      *inFlight = &e.piecesInFlight;
    }
    return e.host.get() + offset;
  }
  Entry &e = checkedEntry(StorageTier::Host, key, bytes, offloading);
  if (!e.host) // the key's first offload
    e.host = HugePageBlock(bytes);
  return e.host.get();
}

Token OffloadStore::offload(Buffer src, StorageTier tier, llvm::StringRef key) {
  char what[TokenPool::kWhatBytes];
  std::snprintf(what, sizeof(what), "offload of %s[%llu, +%llu) to %s '%s'",
                stringifyMemorySpace(src.space).data(),
                (unsigned long long)src.offset, (unsigned long long)src.bytes,
                tierName(tier), key.str().c_str());
  if (tier == StorageTier::Host) {
    std::atomic<int> *inFlight = nullptr;
    std::byte *to = hostBytes(key, src.bytes, /*offloading=*/true, &inFlight);
    return dma.call(what, [to, src, inFlight] {
      std::memcpy(to, src.data, src.bytes);
      if (inFlight)
        inFlight->fetch_sub(1, std::memory_order_release);
    });
  }
  bool first = entry(tier, key).bytes == 0;
  Entry &e = checkedEntry(tier, key, src.bytes, /*offloading=*/true);
  // The host cache: a key that fits when first offloaded stays in memory.
  if (first && hostCacheUsed + src.bytes <= hostCacheBytes) {
    e.cached = true;
    e.host = HugePageBlock(src.bytes);
    hostCacheUsed += src.bytes;
  }
  if (e.cached) {
    std::byte *to = e.host.get();
    return e.last = dma.call(
               what, [to, src] { std::memcpy(to, src.data, src.bytes); });
  }
  if (!createdDirectory && !llvm::sys::fs::is_directory(directory)) {
    if (std::error_code ec = llvm::sys::fs::create_directories(directory))
      fatal(
          llvm::formatv("offload directory {0}: {1}", directory, ec.message()));
    createdDirectory = true;
  }
  std::string path = fileOf(key);
  e.written = true;
  return e.last = dma.call(what, [path, src] {
    int fd =
        ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
      fatal(llvm::formatv("offload file {0}: cannot create: {1}", path,
                          std::strerror(errno)));
    transfer(fd, src.data, src.bytes, /*write=*/true, path);
    ::close(fd);
  });
}

Token OffloadStore::reload(Buffer dst, StorageTier tier, llvm::StringRef key) {
  const std::byte *from = nullptr;
  Entry *stored = nullptr;
  if (tier == StorageTier::Host)
    from = hostBytes(key, dst.bytes, /*offloading=*/false);
  else
    stored = &checkedEntry(tier, key, dst.bytes, /*offloading=*/false);
  if (stored && stored->cached)
    from = stored->host.get();
  char what[TokenPool::kWhatBytes];
  std::snprintf(what, sizeof(what), "reload of %s '%s' into %s[%llu, +%llu)",
                tierName(tier), key.str().c_str(),
                stringifyMemorySpace(dst.space).data(),
                (unsigned long long)dst.offset, (unsigned long long)dst.bytes);
  if (from) {
    Token token =
        dma.call(what, [from, dst] { std::memcpy(dst.data, from, dst.bytes); });
    if (stored)
      stored->last = token;
    return token;
  }
  std::string path = fileOf(key);
  return stored->last = dma.call(what, [path, dst] {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      fatal(llvm::formatv("offload file {0}: cannot open: {1}", path,
                          std::strerror(errno)));
    transfer(fd, dst.data, dst.bytes, /*write=*/false, path);
    ::close(fd);
  });
}

Buffer OffloadStore::copyOf(StorageTier tier, llvm::StringRef key) {
  if (tier == StorageTier::Storage) {
    std::lock_guard<std::mutex> lock(mutex);
    auto whole = storage.find(key.str());
    if (whole != storage.end() && whole->second.cached) {
      // In the host cache: the copy itself, as for the host tier.
      Buffer buffer;
      buffer.data = whole->second.host.get();
      buffer.bytes = whole->second.bytes;
      buffer.space = MemorySpace::DDR;
      return buffer;
    }
    Staging &copy = staging[key.str()];
    if (!copy.data) {
      // The key's file, or the pieces `<key>@<offset>` it was streamed in
      // (each in the host cache or a file).
      if (whole != storage.end() && whole->second.written)
        copy.bytes = whole->second.bytes;
      for (auto &[name, e] : storage)
        if (auto piece = pieceOf(name);
            piece && piece->first == key && (e.written || e.cached))
          copy.bytes = std::max(copy.bytes, piece->second + e.bytes);
      if (copy.bytes == 0)
        fatal(llvm::formatv("offloaded copy of '{0}' in storage: nothing was "
                            "offloaded under that key",
                            key));
      copy.data.reset(new std::byte[copy.bytes]());
    }
    Buffer buffer;
    buffer.data = copy.data.get();
    buffer.bytes = copy.bytes;
    buffer.space = MemorySpace::DDR;
    return buffer;
  }
  Entry &e = entry(tier, key);
  if (e.bytes == 0 || !e.host)
    fatal(llvm::formatv("offloaded copy of '{0}' in host: nothing was "
                        "offloaded under that key",
                        key));
  Buffer copy;
  copy.data = e.host.get();
  copy.bytes = e.bytes;
  copy.space = MemorySpace::DDR;
  return copy;
}

std::vector<Token> OffloadStore::storageTransfers() {
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<Token> tokens;
  for (auto &[key, e] : storage)
    if (e.last.valid())
      tokens.push_back(e.last);
  return tokens;
}

void OffloadStore::transferStaging(const std::string &key, Staging &copy,
                                   bool write) {
  auto one = [&](const std::string &name, uint64_t offset, uint64_t bytes) {
    Entry &e = storage[name];
    if (e.cached) {
      std::byte *staged = copy.data.get() + offset;
      if (write)
        std::memcpy(e.host.get(), staged, bytes);
      else
        std::memcpy(staged, e.host.get(), bytes);
      return;
    }
    std::string path = fileOf(name);
    int fd = write ? ::open(path.c_str(), O_WRONLY | O_CLOEXEC)
                   : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      fatal(llvm::formatv("offload file {0} of '{1}': cannot open for the "
                          "checkpoint: {2}",
                          path, name, std::strerror(errno)));
    transfer(fd, copy.data.get() + offset, bytes, write, path);
    ::close(fd);
  };
  auto whole = storage.find(key);
  if (whole != storage.end() && whole->second.written) {
    one(key, 0, whole->second.bytes);
    return;
  }
  for (auto &[name, e] : storage)
    if (auto piece = pieceOf(name);
        piece && piece->first == key && (e.written || e.cached))
      one(name, piece->second, e.bytes);
}

void OffloadStore::readStaging() {
  std::lock_guard<std::mutex> lock(mutex);
  for (auto &[key, copy] : staging)
    transferStaging(key, copy, /*write=*/false);
}

void OffloadStore::writeStaging() {
  std::lock_guard<std::mutex> lock(mutex);
  for (auto &[key, copy] : staging)
    transferStaging(key, copy, /*write=*/true);
}
