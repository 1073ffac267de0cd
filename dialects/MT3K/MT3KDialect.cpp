//===- MT3KDialect.cpp - The mt3k target dialect --------------------------===//
//
// Registers the types, attributes and operations of the mt3k dialect.
//
//===----------------------------------------------------------------------===//

#include "MT3K/MT3KDialect.h"
#include "MT3K/MT3KAttrs.h"
#include "MT3K/MT3KOps.h"
#include "MT3K/MT3KTypes.h"

using namespace mlir;
using namespace ratrain::mt3k;

#include "MT3K/MT3KDialect.cpp.inc"

LogicalResult MT3KDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  // The declared discardable attributes: on a module, of their own types.
  // No other `mt3k.*` attribute exists.
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto expect = [&](bool ok, StringRef what) -> LogicalResult {
    if (!ok)
      return op->emitOpError("attribute '")
             << name << "' must be " << what << ", got " << value;
    if (!isa<ModuleOp>(op))
      return op->emitOpError("attribute '")
             << name << "' belongs on the module";
    return success();
  };
  if (name == ModelAttrHelper::getNameStr())
    return expect(isa<ModelAttr>(value), "a #mt3k.model");
  if (name == JobAttrHelper::getNameStr())
    return expect(isa<JobAttr>(value), "a #mt3k.job");
  if (name == kPrologueAttrName)
    return success();
  if (name == kMicroBatchGuard) {
    auto mb = dyn_cast<IntegerAttr>(value);
    if (!mb || mb.getInt() < 0)
      return op->emitOpError("attribute '")
             << name << "' must be a micro-batch index (an integer >= 0), got "
             << value;
    if (isa<ModuleOp>(op) || op->getNumRegions() != 0)
      return op->emitOpError("attribute '")
             << name << "' belongs on an op of a program's body";
    return success();
  }
  return op->emitOpError("has the unknown attribute '")
         << name << "' (the mt3k dialect declares mt3k.model, mt3k.job, "
         << kPrologueAttrName << " and " << kMicroBatchGuard << ")";
}

void MT3KDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "MT3K/MT3KOps.cpp.inc"
      >();
  registerTypesAndAttributes();
}
