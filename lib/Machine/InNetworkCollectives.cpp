//===- InNetworkCollectives.cpp - The --in-network tool option ------------===//

#include "ratrain/Machine/MachineModel.h"

#include "llvm/Support/FormatVariadic.h"

using namespace ratrain;

llvm::Error ratrain::applyInNetworkOption(llvm::StringRef text,
                                          MachineModel &machine) {
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "in-network: expected LEVEL:REDUCE[:MULTICAST] (a network level of '" +
            machine.name + "' and speedups of at least 1), got '" + text +
            "': " + why);
  };
  llvm::SmallVector<llvm::StringRef, 3> parts;
  text.split(parts, ':');
  if (parts.size() < 2 || parts.size() > 3)
    return fail("two or three fields");
  InNetworkCollectives in;
  if (parts[0].getAsInteger(10, in.level) || in.level < 0)
    return fail("the level is not a non-negative integer");
  if (parts[1].getAsDouble(in.reduceSpeedup))
    return fail("the reduction speedup is not a number");
  in.multicastSpeedup = in.reduceSpeedup;
  if (parts.size() == 3 && parts[2].getAsDouble(in.multicastSpeedup))
    return fail("the multicast speedup is not a number");
  MachineModel changed = machine;
  changed.network.inNetwork = in;
  if (llvm::Error error = changed.validate())
    return fail(llvm::toString(std::move(error)));
  machine = std::move(changed);
  return llvm::Error::success();
}
