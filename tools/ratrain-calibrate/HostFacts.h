//===- HostFacts.h - What sysfs and procfs say about the host ---*- C++ -*-===//
//
// ratrain-calibrate: the host's caches, RAM and CPU name, read from sysfs
// and procfs (docs/machine-model.md, "Calibration": the [M] caches and RAM).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_CALIBRATE_HOSTFACTS_H
#define RATRAIN_CALIBRATE_HOSTFACTS_H

#include <cstdint>
#include <string>

namespace ratrain::calibrate {

/// A data (or unified) cache level of CPU 0: its size and how many CPUs
/// share it; {0, 1} when sysfs does not list it.
struct CacheLevel {
  int64_t bytes = 0;
  int64_t sharedBy = 1;
};
CacheLevel readCache(int level);

/// MemTotal of /proc/meminfo in bytes; 0 when unreadable.
int64_t memTotalBytes();

/// The "model name" of /proc/cpuinfo; "unknown CPU" without one.
std::string cpuModel();

} // namespace ratrain::calibrate

#endif // RATRAIN_CALIBRATE_HOSTFACTS_H
