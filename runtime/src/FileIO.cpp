//===- FileIO.cpp - Atomic file writes ------------------------------------===//

#include "ratrain/runtime/FileIO.h"
#include "ratrain/Model/JSON.h"
#include "ratrain/runtime/Error.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace ratrain::rt;

namespace {
std::atomic<uint64_t> failureAfterForTesting{UINT64_MAX};
std::atomic<uint64_t> temporaryCounter{0};
} // namespace

void AtomicFile::setWriteFailureAfterForTesting(uint64_t bytes) {
  failureAfterForTesting.store(bytes);
}

/// Fails unless `path` is absent or a regular file: the rename of commit()
/// would replace a symlink, a device node, a fifo or a socket with a regular
/// file (and fail on a directory).
static llvm::Error checkReplaceable(llvm::StringRef path) {
  std::string name = path.str();
  struct stat status;
  if (::lstat(name.c_str(), &status) != 0) {
    if (errno == ENOENT)
      return llvm::Error::success();
    return makeError(
        llvm::formatv("{0}: cannot inspect: {1}", path, std::strerror(errno)));
  }
  if (S_ISREG(status.st_mode))
    return llvm::Error::success();
  const char *kind = S_ISLNK(status.st_mode)    ? "a symbolic link"
                     : S_ISDIR(status.st_mode)  ? "a directory"
                     : S_ISFIFO(status.st_mode) ? "a fifo"
                     : S_ISCHR(status.st_mode)  ? "a character device"
                     : S_ISBLK(status.st_mode)  ? "a block device"
                     : S_ISSOCK(status.st_mode) ? "a socket"
                                                : "a special file";
  return makeError(llvm::formatv("{0}: refusing to replace {1} with the "
                                 "output; only a regular file or a new path "
                                 "can be written",
                                 path, kind));
}

llvm::Expected<AtomicFile> AtomicFile::create(llvm::StringRef path) {
  if (llvm::Error error = checkReplaceable(path))
    return std::move(error);
  AtomicFile file;
  file.target = path.str();
  llvm::StringRef directory = llvm::sys::path::parent_path(path);
  llvm::SmallString<256> temporary(directory.empty() ? "." : directory);
  llvm::sys::path::append(temporary,
                          llvm::formatv(".{0}.tmp.{1}.{2}",
                                        llvm::sys::path::filename(path),
                                        getpid(), temporaryCounter.fetch_add(1))
                              .str());
  file.temporary = std::string(temporary);
  file.fd = ::open(file.temporary.c_str(),
                   O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (file.fd < 0)
    return makeError(llvm::formatv("{0}: cannot create a temporary file: {1}",
                                   path, std::strerror(errno)));
  file.failAfter = failureAfterForTesting.load();
  return file;
}

AtomicFile::AtomicFile(AtomicFile &&other)
    : target(std::move(other.target)), temporary(std::move(other.temporary)),
      fd(other.fd), written(other.written), failAfter(other.failAfter),
      committed(other.committed) {
  other.fd = -1;
  other.committed = true; // The moved-from object owns nothing.
}

AtomicFile::~AtomicFile() {
  if (fd >= 0)
    ::close(fd);
  if (!committed && !temporary.empty())
    ::unlink(temporary.c_str());
}

llvm::Error AtomicFile::write(const void *data, uint64_t bytes) {
  if (fd < 0)
    return makeError(target + ": write after commit or failure");
  auto *p = static_cast<const char *>(data);
  while (bytes > 0) {
    uint64_t chunk = std::min<uint64_t>(bytes, uint64_t(1) << 30);
    if (failAfter != UINT64_MAX && written + chunk > failAfter) {
      chunk = failAfter - written;
      if (chunk == 0)
        return makeError(llvm::formatv("{0}: write failed after {1} bytes: "
                                       "{2} (injected for testing)",
                                       target, written, std::strerror(ENOSPC)));
    }
    ssize_t n = ::write(fd, p, chunk);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return makeError(llvm::formatv("{0}: write failed after {1} bytes: {2}",
                                     target, written, std::strerror(errno)));
    }
    p += n;
    bytes -= uint64_t(n);
    written += uint64_t(n);
  }
  return llvm::Error::success();
}

llvm::Error AtomicFile::commit() {
  if (fd < 0)
    return makeError(target + ": commit after commit or failure");
  if (::fsync(fd) != 0) {
    int error = errno;
    ::close(fd);
    fd = -1;
    return makeError(
        llvm::formatv("{0}: fsync failed: {1}", target, std::strerror(error)));
  }
  int rc = ::close(fd);
  fd = -1;
  if (rc != 0)
    return makeError(
        llvm::formatv("{0}: close failed: {1}", target, std::strerror(errno)));
  // Again right before the rename: the target may have changed meanwhile.
  // (The destructor removes the temporary file.)
  if (llvm::Error error = checkReplaceable(target))
    return error;
  if (::rename(temporary.c_str(), target.c_str()) != 0)
    return makeError(llvm::formatv("{0}: cannot rename the temporary file "
                                   "into place: {1}",
                                   target, std::strerror(errno)));
  committed = true;
  llvm::StringRef directory = llvm::sys::path::parent_path(target);
  return syncDirectory(directory.empty() ? "." : directory);
}

llvm::Error ratrain::rt::writeFileAtomically(llvm::StringRef path,
                                             llvm::StringRef contents) {
  auto file = AtomicFile::create(path);
  if (!file)
    return file.takeError();
  if (llvm::Error error = file->write(contents))
    return error;
  return file->commit();
}

llvm::Error ratrain::rt::syncDirectory(llvm::StringRef directory) {
  std::string name = directory.str();
  int fd = ::open(name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return makeError(llvm::formatv("{0}: cannot open directory: {1}", directory,
                                   std::strerror(errno)));
  int rc = ::fsync(fd);
  int error = errno;
  ::close(fd);
  if (rc != 0)
    return makeError(llvm::formatv("{0}: fsync of directory failed: {1}",
                                   directory, std::strerror(error)));
  return llvm::Error::success();
}

std::string ratrain::rt::joinPath(llvm::StringRef directory,
                                  llvm::StringRef name) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

llvm::Expected<llvm::json::Value>
ratrain::rt::readJSONFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError(llvm::formatv("{0}: cannot read: {1}", path,
                                   buffer.getError().message()));
  auto value = ratrain::parseJSON((*buffer)->getBuffer());
  if (!value)
    return makeError(llvm::formatv("{0}: corrupt JSON: {1}", path,
                                   llvm::toString(value.takeError())));
  return value;
}
