//===- MT3KAttrs.td - mt3k enums and attributes ------------*- tablegen -*-===//
//
// Enumerations of the mt3k dialect and the attributes that carry them.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MT3K_ATTRS_TD
#define RATRAIN_MT3K_ATTRS_TD

include "MT3K/MT3KDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enumerations
//===----------------------------------------------------------------------===//

def MT3K_MemorySpace : I32EnumAttr<"MemorySpace",
    "a memory space of an MT-3000-like cluster", [
      I32EnumAttrCase<"ddr", 0>,
      I32EnumAttrCase<"gsm", 1>,
      I32EnumAttrCase<"am", 2>
    ]> {
  let cppNamespace = "::ratrain::mt3k";
  let genSpecializedAttr = 0;
}

def MT3K_GroupKind : I32EnumAttr<"GroupKind", "the role of a process group", [
      I32EnumAttrCase<"data_parallel", 0>,
      I32EnumAttrCase<"pipeline", 1>,
      I32EnumAttrCase<"node_local", 2>
    ]> {
  let cppNamespace = "::ratrain::mt3k";
  let genSpecializedAttr = 0;
}

def MT3K_CollectiveAlgorithm : I32EnumAttr<"CollectiveAlgorithm",
    "how a collective is carried out", [
      I32EnumAttrCase<"ring", 0>,
      I32EnumAttrCase<"tree", 1>,
      I32EnumAttrCase<"hierarchical", 2>
    ]> {
  let cppNamespace = "::ratrain::mt3k";
  let genSpecializedAttr = 0;
}

def MT3K_ReduceKind : I32EnumAttr<"ReduceKind", "a reduction operator", [
      I32EnumAttrCase<"sum", 0>,
      I32EnumAttrCase<"avg", 1>,
      I32EnumAttrCase<"max", 2>,
      I32EnumAttrCase<"min", 3>
    ]> {
  let cppNamespace = "::ratrain::mt3k";
  let genSpecializedAttr = 0;
}

def MT3K_ElementwiseKind : I32EnumAttr<"ElementwiseKind",
    "a memory-bound kernel of mt3k.elementwise", [
      I32EnumAttrCase<"swiglu", 0>,
      I32EnumAttrCase<"swiglu_bwd", 1>,
      I32EnumAttrCase<"residual_add", 2>,
      I32EnumAttrCase<"rope", 3>,
      I32EnumAttrCase<"rope_bwd", 4>,
      I32EnumAttrCase<"embedding", 5>,
      I32EnumAttrCase<"embedding_bwd", 6>,
      I32EnumAttrCase<"cross_entropy", 7>,
      I32EnumAttrCase<"cross_entropy_bwd", 8>,
      I32EnumAttrCase<"cast", 9>,
      I32EnumAttrCase<"scale", 10>
    ]> {
  let cppNamespace = "::ratrain::mt3k";
  let genSpecializedAttr = 0;
}

def MT3K_BatchField : I32EnumAttr<"BatchField",
    "which part of a micro-batch the data loader provides", [
      I32EnumAttrCase<"inputs", 0>,
      I32EnumAttrCase<"labels", 1>
    ]> {
  let cppNamespace = "::ratrain::mt3k";
  let genSpecializedAttr = 0;
}

def MT3K_InitKind : I32EnumAttr<"InitKind",
    "how mt3k.init_param initializes a parameter", [
      I32EnumAttrCase<"zeros", 0>,
      I32EnumAttrCase<"ones", 1>,
      I32EnumAttrCase<"normal", 2>
    ]> {
  let cppNamespace = "::ratrain::mt3k";
  let genSpecializedAttr = 0;
}

def MT3K_StorageTier : I32EnumAttr<"StorageTier",
    "where mt3k.offload keeps data outside the DDR arena", [
      I32EnumAttrCase<"host", 0>,
      I32EnumAttrCase<"storage", 1>
    ]> {
  let cppNamespace = "::ratrain::mt3k";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Enum attributes
//===----------------------------------------------------------------------===//

class MT3K_EnumAttr<EnumAttrInfo enumInfo, string name>
    : EnumAttr<MT3K_Dialect, enumInfo, name> {
  // A bare keyword inside operations (`data_parallel`), and
  // `#mt3k<group_kind data_parallel>` in the generic form. The printer emits
  // the space before the keyword, so op formats put `` before an enum.
  let assemblyFormat = "$value";
}

def MT3K_MemorySpaceAttr : MT3K_EnumAttr<MT3K_MemorySpace, "space">;
def MT3K_GroupKindAttr : MT3K_EnumAttr<MT3K_GroupKind, "group_kind">;
def MT3K_CollectiveAlgorithmAttr
    : MT3K_EnumAttr<MT3K_CollectiveAlgorithm, "algorithm">;
def MT3K_ReduceKindAttr : MT3K_EnumAttr<MT3K_ReduceKind, "reduce">;
def MT3K_ElementwiseKindAttr
    : MT3K_EnumAttr<MT3K_ElementwiseKind, "elementwise">;
def MT3K_BatchFieldAttr : MT3K_EnumAttr<MT3K_BatchField, "batch_field">;
def MT3K_InitKindAttr : MT3K_EnumAttr<MT3K_InitKind, "init">;
def MT3K_StorageTierAttr : MT3K_EnumAttr<MT3K_StorageTier, "tier">;

#endif // RATRAIN_MT3K_ATTRS_TD
