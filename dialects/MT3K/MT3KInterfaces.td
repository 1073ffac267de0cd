//===- MT3KInterfaces.td - mt3k op interfaces --------------*- tablegen -*-===//
//
// Interfaces of the mt3k operations. Included from MT3KOps.td; generated
// separately (MT3KInterfaces.h.inc / .cpp.inc).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MT3K_INTERFACES_TD
#define RATRAIN_MT3K_INTERFACES_TD

include "mlir/IR/OpBase.td"

def MT3K_AsyncOpInterface : OpInterface<"AsyncOpInterface"> {
  let description = [{
    An operation that starts asynchronous work (a DMA, a collective, a
    point-to-point transfer, an offload or a reload) and returns a
    `!mt3k.token` at once. The work performs the operation's declared memory
    effects (`MemoryEffectOpInterface`) at some time between the operation
    and the `mt3k.wait` that consumes the token: until that wait, a later
    operation that writes what the work reads, or touches what it writes,
    races with it. The mt3k async-hazard analysis
    (`ratrain/Analysis/AsyncHazards.h`) derives these conflicts from the
    effects; `--mt3k-verify` reports them and `--mt3k-insert-waits` places
    the missing waits.

    Verified here (structure only): the token is consumed by at most one
    `mt3k.wait`, the one that releases its runtime handle. Whether it is
    waited on, and early enough, is `--mt3k-verify`'s business.
  }];
  let cppNamespace = "::ratrain::mt3k";

  let methods = [
    InterfaceMethod<[{
        The token that completes when the asynchronous work is done.
      }],
      "::mlir::TypedValue<::ratrain::mt3k::TokenType>", "getAsyncToken",
      (ins), [{}], [{
        return $_op.getToken();
      }]
    >,
  ];

  let verify = [{
    return ::ratrain::mt3k::detail::verifyAsyncOpInterface($_op);
  }];
}

#endif // RATRAIN_MT3K_INTERFACES_TD
