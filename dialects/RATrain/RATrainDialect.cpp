//===- RATrainDialect.cpp - The ratrain dialect ---------------------------===//

#include "RATrain/RATrainDialect.h"
#include "RATrain/RATrainOps.h"

using namespace mlir;
using namespace ratrain;

#include "RATrain/RATrainDialect.cpp.inc"

void RATrainDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "RATrain/RATrainOps.cpp.inc"
      >();
  registerTypes();
  registerAttributes();
}
