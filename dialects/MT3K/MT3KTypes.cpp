//===- MT3KTypes.cpp - mt3k types and attributes --------------------------===//
//
// !mt3k.buffer parsing, printing and verification; enum attributes.
//
//===----------------------------------------------------------------------===//

#include "MT3K/MT3KTypes.h"
#include "MT3K/MT3KAttrs.h"
#include "MT3K/MT3KDialect.h"

#include "ratrain/Model/ModelConfig.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace ratrain::mt3k;

#include "MT3K/MT3KEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "MT3K/MT3KAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "MT3K/MT3KTypes.cpp.inc"

void MT3KDialect::registerTypesAndAttributes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "MT3K/MT3KTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "MT3K/MT3KAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// RopeScalingAttr
//===----------------------------------------------------------------------===//

/// The model description's scaling of the attribute's fields.
static llvm::Expected<ratrain::RopeScaling>
ropeScalingOf(RopeScalingMethod method, const APFloat &factor,
              const APFloat &lowFreqFactor, const APFloat &highFreqFactor,
              int64_t originalMaxPositions) {
  return ratrain::RopeScaling::fromFields(
      method == RopeScalingMethod::linear ? ratrain::RopeScalingKind::Linear
                                          : ratrain::RopeScalingKind::Llama3,
      factor.convertToDouble(), lowFreqFactor.convertToDouble(),
      highFreqFactor.convertToDouble(), originalMaxPositions);
}

ratrain::RopeScaling RopeScalingAttr::getScaling() const {
  // The attribute verified, so the fields make a valid scaling.
  return llvm::cantFail(ropeScalingOf(getMethod(), getFactor(),
                                      getLowFreqFactor(), getHighFreqFactor(),
                                      getOriginalMaxPositions()));
}

LogicalResult
RopeScalingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        RopeScalingMethod method, APFloat factor,
                        APFloat lowFreqFactor, APFloat highFreqFactor,
                        int64_t originalMaxPositions) {
  llvm::Expected<ratrain::RopeScaling> scaling = ropeScalingOf(
      method, factor, lowFreqFactor, highFreqFactor, originalMaxPositions);
  if (!scaling)
    return emitError() << llvm::toString(scaling.takeError());
  return success();
}

//===----------------------------------------------------------------------===//
// BufferType
//===----------------------------------------------------------------------===//

bool BufferType::isValidElementType(Type type) {
  return type.isF32() || type.isF16() || type.isBF16() || type.isInteger(8) ||
         type.isInteger(32) || type.isInteger(64);
}

int64_t BufferType::getNumElements() const {
  int64_t count = 1;
  for (int64_t dim : getShape())
    count *= dim;
  return count;
}

int64_t BufferType::getElementSizeInBytes() const {
  return (getElementType().getIntOrFloatBitWidth() + 7) / 8;
}

LogicalResult
BufferType::verify(llvm::function_ref<InFlightDiagnostic()> emitError,
                   MemorySpace space, ArrayRef<int64_t> shape,
                   Type elementType) {
  for (int64_t dim : shape)
    if (dim <= 0)
      return emitError() << "buffer dimensions must be positive, got " << dim;
  if (!isValidElementType(elementType))
    return emitError() << "buffer element type must be f32, f16, bf16, i8, "
                          "i32 or i64, got "
                       << elementType;
  // The byte size must fit in int64_t.
  int64_t elementBytes = (elementType.getIntOrFloatBitWidth() + 7) / 8;
  int64_t bytes = elementBytes;
  for (int64_t dim : shape) {
    if (bytes > std::numeric_limits<int64_t>::max() / dim)
      return emitError() << "buffer size overflows 64 bits";
    bytes *= dim;
  }
  return success();
}

/// `!mt3k.buffer<ddr, 4096x4096xbf16>`, `!mt3k.buffer<ddr, f32>`.
Type BufferType::parse(AsmParser &parser) {
  MLIRContext *context = parser.getContext();
  llvm::SMLoc loc = parser.getCurrentLocation();
  StringRef spaceName;
  SmallVector<int64_t> shape;
  Type elementType;
  if (parser.parseLess() || parser.parseKeyword(&spaceName))
    return {};
  std::optional<MemorySpace> space = symbolizeMemorySpace(spaceName);
  if (!space) {
    parser.emitError(loc) << "unknown memory space '" << spaceName
                          << "', expected ddr, gsm or am";
    return {};
  }
  if (parser.parseComma())
    return {};
  llvm::SMLoc shapeLoc = parser.getCurrentLocation();
  if (parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType) || parser.parseGreater())
    return {};
  return parser.getChecked<BufferType>(shapeLoc, context, *space, shape,
                                       elementType);
}

void BufferType::print(AsmPrinter &printer) const {
  printer << "<" << stringifyMemorySpace(getSpace()) << ", ";
  for (int64_t dim : getShape())
    printer << dim << "x";
  printer << getElementType() << ">";
}
