//===- HostFacts.cpp - What sysfs and procfs say about the host -----------===//

#include "HostFacts.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <memory>

using namespace ratrain::calibrate;

static std::string readFile(const std::string &path) {
  // sysfs and procfs report a size of 0: read them as streams.
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileAsStream(path);
  if (!buffer)
    return "";
  return (*buffer)->getBuffer().trim().str();
}

/// "1024K" -> 1048576.
static int64_t parseCacheSize(llvm::StringRef text) {
  int64_t scale = 1;
  if (text.consume_back("K"))
    scale = 1024;
  else if (text.consume_back("M"))
    scale = 1024 * 1024;
  int64_t value = 0;
  if (text.getAsInteger(10, value))
    return 0;
  return value * scale;
}

/// CPUs in a sysfs list like "0-1,4".
static int64_t countCpuList(llvm::StringRef list) {
  int64_t count = 0;
  llvm::SmallVector<llvm::StringRef> parts;
  list.split(parts, ',', -1, false);
  for (llvm::StringRef part : parts) {
    auto [lo, hi] = part.split('-');
    int64_t a = 0, b = 0;
    if (lo.getAsInteger(10, a))
      continue;
    if (hi.empty() || hi.getAsInteger(10, b))
      b = a;
    count += b - a + 1;
  }
  return std::max<int64_t>(count, 1);
}

CacheLevel ratrain::calibrate::readCache(int level) {
  CacheLevel result;
  for (int index = 0; index < 8; ++index) {
    std::string dir =
        llvm::formatv("/sys/devices/system/cpu/cpu0/cache/index{0}", index);
    std::string lvl = readFile(dir + "/level");
    if (lvl.empty())
      break;
    std::string type = readFile(dir + "/type");
    if (lvl != std::to_string(level) || type == "Instruction")
      continue;
    result.bytes = parseCacheSize(readFile(dir + "/size"));
    result.sharedBy = countCpuList(readFile(dir + "/shared_cpu_list"));
  }
  return result;
}

int64_t ratrain::calibrate::memTotalBytes() {
  std::string meminfo = readFile("/proc/meminfo");
  for (llvm::StringRef line : llvm::split(meminfo, '\n')) {
    if (!line.consume_front("MemTotal:"))
      continue;
    line = line.trim();
    line.consume_back("kB");
    int64_t kb = 0;
    if (!line.trim().getAsInteger(10, kb))
      return kb * 1024;
  }
  return 0;
}

std::string ratrain::calibrate::cpuModel() {
  std::string cpuinfo = readFile("/proc/cpuinfo");
  for (llvm::StringRef line : llvm::split(cpuinfo, '\n'))
    if (line.starts_with("model name"))
      return line.split(':').second.trim().str();
  return "unknown CPU";
}
