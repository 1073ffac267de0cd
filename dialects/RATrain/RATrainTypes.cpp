//===- RATrainTypes.cpp - ratrain state types -----------------------------===//

#include "RATrain/RATrainTypes.h"
#include "RATrain/RATrainDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace ratrain;

#define GET_TYPEDEF_CLASSES
#include "RATrain/RATrainTypes.cpp.inc"

void RATrainDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "RATrain/RATrainTypes.cpp.inc"
      >();
}

std::optional<int64_t> ratrain::getStateLayer(Type type) {
  return TypeSwitch<Type, std::optional<int64_t>>(type)
      .Case<ViewType, MasterType, OptStateType, GradType, ActivationType,
            DeferredType>(
          [](auto state) -> std::optional<int64_t> { return state.getLayer(); })
      .Case<AsyncType>(
          [](AsyncType async) { return getStateLayer(async.getValue()); })
      .Case<OffloadedType>([](OffloadedType offloaded) {
        return getStateLayer(offloaded.getState());
      })
      .Default([](Type) { return std::nullopt; });
}

LogicalResult
OffloadedType::verify(function_ref<InFlightDiagnostic()> emitError,
                      Type state) {
  if (!isa<ViewType, MasterType, OptStateType, GradType, ActivationType>(state))
    return emitError() << "only a training state can be offloaded, got "
                       << state;
  return success();
}
