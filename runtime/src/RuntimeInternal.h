//===- RuntimeInternal.h - What Runtime's source files share ---*- C++ -*-===//
//
// The MPI objects and helpers Runtime.cpp (set-up, memory, waits) and
// RuntimeCollectives.cpp (groups, collectives, point-to-point) share; not
// part of the runtime's API.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_SRC_RUNTIMEINTERNAL_H
#define RATRAIN_RUNTIME_SRC_RUNTIMEINTERNAL_H

#include "ratrain/runtime/Runtime.h"

#include <mpi.h>

namespace ratrain::rt::detail {

/// The communicator of each group (Runtime's constructor builds them).
extern MPI_Comm communicators[kNumGroups];
/// Private duplicates of the groups for explicit collectives, and the Data
/// group's sub-communicators per level (see Runtime::dataLevelMembers).
extern MPI_Comm collectiveComms[kNumGroups];
extern MPI_Comm dataLevelComms[kMaxLevels];

MPI_Datatype mpiType(ElemType type);
/// The MPI reduction of `op` on `type` (16-bit sums: the runtime's own).
MPI_Op mpiOp(ElemType type, ReduceOp op);
/// Element count of `buffer`, which must hold whole elements and fit an int.
int elementCount(const Buffer &buffer, unsigned elemBytes, const char *what);

} // namespace ratrain::rt::detail

#endif // RATRAIN_RUNTIME_SRC_RUNTIMEINTERNAL_H
