//===- TestMachine.h - Small machines for the simulator tests ---*- C++ -*-===//

#ifndef RATRAIN_TEST_UNIT_SIMULATOR_TESTMACHINE_H
#define RATRAIN_TEST_UNIT_SIMULATOR_TESTMACHINE_H

#include "ratrain/Machine/MachineModel.h"

#include "llvm/Support/Error.h"

#include "gtest/gtest.h"

#include <string>

namespace ratrain {
namespace sim {
namespace testing {

/// A machine with round numbers so that expected times can be computed by
/// hand: intra-node 10 B/s with 0.25 s latency, inter-node 2 B/s with 1 s
/// latency, DMA 4 B/s over 2 channels.
inline MachineModel makeTestMachine() {
  MachineModel machine;
  machine.name = "test";
  machine.nodes = 4;
  machine.clustersPerNode = 4;
  machine.cluster.dmaBandwidth = 4;
  machine.cluster.dmaChannels = 2;
  machine.cluster.ddrBytes = 1000;
  machine.cluster.peakFlopsF16 = 100;
  machine.network.intraNode = {10.0, 0.25};
  machine.network.interNode = {2.0, 1.0};
  return machine;
}

/// Takes the value of an Expected or fails the test with its message.
template <typename T> T expectOk(llvm::Expected<T> value) {
  if (!value) {
    ADD_FAILURE() << llvm::toString(value.takeError());
    return T();
  }
  return std::move(*value);
}

/// The message of an Expected that must be an error.
template <typename T> std::string expectError(llvm::Expected<T> value) {
  if (value) {
    ADD_FAILURE() << "expected an error";
    return "";
  }
  return llvm::toString(value.takeError());
}

} // namespace testing
} // namespace sim
} // namespace ratrain

#endif // RATRAIN_TEST_UNIT_SIMULATOR_TESTMACHINE_H
