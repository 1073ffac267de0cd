//===- SyncPhases.cpp - Which step averages which layer ------------------===//

#include "ratrain/Planner/SyncPhases.h"

#include <algorithm>
#include <cassert>
#include <numeric>

using namespace ratrain;

std::vector<int64_t> ratrain::assignSyncPhases(llvm::ArrayRef<int64_t> bytes,
                                               int64_t period) {
  assert(period >= 1 && "a sync period is at least one step");
  std::vector<size_t> order(bytes.size());
  std::iota(order.begin(), order.end(), size_t(0));
  // Largest first; equal sizes keep the stage's order.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return bytes[a] > bytes[b]; });
  std::vector<int64_t> load(size_t(period), 0);
  std::vector<int64_t> phases(bytes.size(), 0);
  for (size_t item : order) {
    auto lightest = std::min_element(load.begin(), load.end());
    phases[item] = lightest - load.begin();
    *lightest += bytes[item];
  }
  return phases;
}
