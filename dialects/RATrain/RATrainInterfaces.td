//===- RATrainInterfaces.td - ratrain op interfaces --------*- tablegen -*-===//
//
// What the schedule passes, the lowering and the simulator ask of a stage
// program's ops without knowing each op: a description for diagnostics and,
// for pipeline transfers, the message they carry.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_INTERFACES_TD
#define RATRAIN_INTERFACES_TD

include "mlir/IR/OpBase.td"

def RATrain_ScheduleOpInterface : OpInterface<"ScheduleOpInterface"> {
  let cppNamespace = "::ratrain";
  let description = [{
    An op of a stage program (every op a `ratrain.stage` holds, its
    terminator included).
  }];
  let methods = [
    InterfaceMethod<[{
        A short description for diagnostics: the op's name, the payload of a
        transfer, the layer of the state it produces or consumes and its
        micro-batch, e.g. "ratrain.backward of layer 3 mb(2)".
      }],
      "std::string", "describe", (ins), /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::ratrain::detail::describeScheduleOp($_op);
      }]>
  ];
}

def RATrain_TransferOpInterface : OpInterface<"TransferOpInterface"> {
  let cppNamespace = "::ratrain";
  let description = [{
    A pipeline transfer (`ratrain.send`, `ratrain.recv`): one micro-batch's
    boundary tensor between neighbour stages.
  }];
  let methods = [
    InterfaceMethod<"The tensor the transfer carries.",
      "::ratrain::Payload", "getPayload">,
    InterfaceMethod<"The micro-batch of the tensor.",
      "uint64_t", "getMicroBatch">,
    InterfaceMethod<"The rank the tensor goes to or comes from.",
      "uint64_t", "getPeer">,
    InterfaceMethod<"The virtual stage of this side of the transfer.",
      "int64_t", "getVirtualStage">,
    InterfaceMethod<"The virtual stage of the other side.",
      "int64_t", "getPeerVirtualStage">,
    InterfaceMethod<"Whether the tensor travels as a one-sided put.",
      "bool", "getOneSided">
  ];
}

#endif // RATRAIN_INTERFACES_TD
