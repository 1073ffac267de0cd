//===- E2ECommon.h - Shared pieces of the runtime e2e tests -----*- C++ -*-===//
//
// What every mpirun test of the runtime (RuntimeE2E, CollectiveLevelsE2E,
// PartitionGroupsE2E, QuantizedCommE2E) needs: a CHECK that fails the whole
// job with a message, and the --pp/--dp flags.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_TEST_E2E_E2ECOMMON_H
#define RATRAIN_TEST_E2E_E2ECOMMON_H

#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/Runtime.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdlib>
#include <string>

/// Fails the job (ratrain::rt::fatal) unless `cond` holds; the rest is a
/// formatv message.
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond))                                                               \
      ::ratrain::rt::fatal(llvm::formatv("check failed: {0}: {1}", #cond,      \
                                         llvm::formatv(__VA_ARGS__).str()));   \
  } while (false)

namespace ratrain::rt::e2e {

/// The pipeline and data-parallel sizes a test runs with.
struct Dims {
  int pp = 1;
  int dp = 1;
};

/// Parses `--pp P` and `--dp D` from argv[first] on; anything else is fatal
/// with `usage`.
inline Dims parseDims(int argc, char **argv, int first, const char *usage) {
  Dims dims;
  for (int i = first; i < argc; i += 2) {
    std::string flag = argv[i];
    if (i + 1 >= argc)
      fatal(flag + " needs a value (usage: " + usage + ")");
    int value = std::atoi(argv[i + 1]);
    if (flag == "--pp")
      dims.pp = value;
    else if (flag == "--dp")
      dims.dp = value;
    else
      fatal("unknown flag " + flag + " (usage: " + usage + ")");
  }
  return dims;
}

} // namespace ratrain::rt::e2e

#endif // RATRAIN_TEST_E2E_E2ECOMMON_H
