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

LogicalResult RATrainDialect::verifyOperationAttribute(Operation *op,
                                                       NamedAttribute attr) {
  // The declared discardable attributes must have their declared type;
  // other `ratrain.*` names are not checked here.
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto expect = [&](bool ok, StringRef what) -> LogicalResult {
    if (ok)
      return success();
    return op->emitOpError("attribute '")
           << name << "' must be " << what << ", got " << value;
  };
  if (name == BuffersAttrHelper::getNameStr() ||
      name == ArgBuffersAttrHelper::getNameStr())
    return expect(isa<DenseI64ArrayAttr>(value), "an array<i64: ...>");
  if (name == ScratchBuffersAttrHelper::getNameStr())
    return expect(isa<DictionaryAttr>(value), "a dictionary");
  if (name == PeakBytesAttrHelper::getNameStr() ||
      name == PeakPositionAttrHelper::getNameStr() ||
      name == ArenaBytesAttrHelper::getNameStr() ||
      name == CapacityBytesAttrHelper::getNameStr())
    return expect(isa<IntegerAttr>(value), "an integer");
  if (name == MachineAttrHelper::getNameStr())
    return expect(isa<StringAttr>(value), "a string");
  return success();
}
