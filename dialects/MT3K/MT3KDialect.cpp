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

void MT3KDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "MT3K/MT3KOps.cpp.inc"
      >();
  registerTypesAndAttributes();
}
