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
      I32EnumAttrCase<"node_local", 2>,
      I32EnumAttrCase<"data_inside", 3>,
      I32EnumAttrCase<"data_across", 4>,
      I32EnumAttrCase<"world", 5>
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

def MT3K_WireType : I32EnumAttr<"WireType",
    "the block-wise quantized encoding of a collective's data", [
      I32EnumAttrCase<"int8", 0>,
      I32EnumAttrCase<"int4", 1>
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

def MT3K_RopeScalingMethod : I32EnumAttr<"RopeScalingMethod",
    "how the rotary frequencies of a rope kernel are rescaled", [
      I32EnumAttrCase<"linear", 0>,
      I32EnumAttrCase<"llama3", 1>
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

def MT3K_TracePhase : I32EnumAttr<"TracePhase",
    "what the work of a traced schedule op is (the simulator's compute kinds)", [
      I32EnumAttrCase<"forward", 0>,
      I32EnumAttrCase<"backward", 1>,
      I32EnumAttrCase<"recompute", 2>,
      I32EnumAttrCase<"update", 3>,
      I32EnumAttrCase<"view_cast", 4>,
      I32EnumAttrCase<"other", 5>
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
def MT3K_WireTypeAttr : MT3K_EnumAttr<MT3K_WireType, "wire">;
def MT3K_ElementwiseKindAttr
    : MT3K_EnumAttr<MT3K_ElementwiseKind, "elementwise">;
def MT3K_BatchFieldAttr : MT3K_EnumAttr<MT3K_BatchField, "batch_field">;
def MT3K_InitKindAttr : MT3K_EnumAttr<MT3K_InitKind, "init">;
def MT3K_StorageTierAttr : MT3K_EnumAttr<MT3K_StorageTier, "tier">;
def MT3K_TracePhaseAttr : MT3K_EnumAttr<MT3K_TracePhase, "trace_phase">;

//===----------------------------------------------------------------------===//
// What a job's programs need besides the programs
//===----------------------------------------------------------------------===//

/// A double printed and parsed as a bare float (`4.000000e+00`); with a
/// default, omitted from a struct when it has the default value.
class MT3K_F64Parameter<string default = "">
    : APFloatParameter<"a double"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double value;
    if ($_parser.parseFloat(value))
      return ::mlir::failure();
    return ::llvm::APFloat(value);
  }() }];
  let printer = "$_printer.printFloat($_self)";
  let defaultValue = default;
}

class MT3K_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<MT3K_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def MT3K_ModelAttr : MT3K_Attr<"Model", "model"> {
  let summary = "the model a job trains, as the runtime needs it";
  let description = [{
    The sizes and constants of the LLaMA-style decoder the programs train:
    what the runtime's model description (data loader, loss log,
    checkpoint names and shapes) needs. The lowering sets it on the module
    as `mt3k.model`, since the front-end model op goes away.

    ```mlir
    mt3k.model = #mt3k.model<name = "tiny_llama", family = "llama",
      dtype = f32, decoder_layers = 4, hidden = 256, heads = 8,
      kv_heads = 4, ffn = 688, vocab = 256, seq_len = 256,
      max_positions = 256, rms_eps = 1.000000e-05, rope_theta = 1.000000e+04,
      qkv_bias = false, norm_head = false>
    ```

    `tie_embeddings` (omitted when false) marks a model whose LM head is
    the embedding table: its checkpoints have no `lm_head.weight`.
    `head_dim` (omitted when `hidden / heads`) is the attention heads'
    width.
  }];
  let parameters = (ins "::mlir::StringAttr":$name, "::mlir::StringAttr":$family,
                        "::mlir::Type":$dtype, "int64_t":$decoder_layers,
                        "int64_t":$hidden, "int64_t":$heads, "int64_t":$kv_heads,
                        "int64_t":$ffn, "int64_t":$vocab, "int64_t":$seq_len,
                        "int64_t":$max_positions, "::mlir::FloatAttr":$rms_eps,
                        "::mlir::FloatAttr":$rope_theta,
                        "::mlir::BoolAttr":$qkv_bias,
                        "::mlir::BoolAttr":$norm_head,
                        OptionalParameter<"::mlir::BoolAttr">:$tie_embeddings,
                        OptionalParameter<"::mlir::IntegerAttr">:$head_dim);
  let assemblyFormat = "`<` struct(params) `>`";
}

def MT3K_RopeScalingAttr : MT3K_Attr<"RopeScaling", "rope_scaling"> {
  let summary = "rescaled rotary frequencies of a rope kernel";
  let description = [{
    The frequencies `theta^(-2i/d)` of `mt3k.elementwise rope` and
    `rope_bwd` rescaled as HF's `rope_scaling` (the front end's
    `#ratrain.rope_scaling`): `linear` divides all by `factor`; `llama3`
    divides those with a wavelength above `original_max_positions /
    low_freq_factor` by `factor`, keeps those below `original_max_positions /
    high_freq_factor` and interpolates in between.

    ```mlir
    #mt3k.rope_scaling<method = llama3, factor = 3.200000e+01,
      low_freq_factor = 1.000000e+00, high_freq_factor = 4.000000e+00,
      original_max_positions = 8192>
    ```
  }];
  let parameters = (ins
    EnumParameter<MT3K_RopeScalingMethod>:$method,
    MT3K_F64Parameter<>:$factor,
    MT3K_F64Parameter<"::llvm::APFloat(0.0)">:$low_freq_factor,
    MT3K_F64Parameter<"::llvm::APFloat(0.0)">:$high_freq_factor,
    DefaultValuedParameter<"int64_t", "0">:$original_max_positions
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The scaling as the model description (ratrain/Model) computes it.
    ::ratrain::RopeScaling getScaling() const;
  }];
}

def MT3K_JobAttr : MT3K_Attr<"Job", "job"> {
  let summary = "the parallel layout and batching of a job";
  let description = [{
    The job the programs are one step of: clusters, pipeline stages `pp`
    and data-parallel replicas `dp`, micro-batching, the ZeRO stage, the
    model layers (embedding, decoder layers, head) of each virtual stage,
    the lifecycle policy that scheduled it, and with interleaved schedules
    `stage_ranks`, the rank (pipeline stage) that runs each virtual stage.
    With uneven data-parallel shares, `replica_micro_batches` (one entry per
    replica; ops of later micro-batches carry `mt3k.micro_batch`);
    `replica_major` when ranks are replica * pp + stage; on a machine with
    classes of clusters, `rank_slowdown`: per rank, the fastest class's
    compute over its class's (what `--emulate-classes` makes a homogeneous
    host imitate). The lowering sets it on the module as `mt3k.job`.

    ```mlir
    mt3k.job = #mt3k.job<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1,
      micro_batches = 4, zero = 0, stage_layers = array<i64: 3, 3>,
      policy = "ratrain">
    ```
  }];
  let parameters = (ins "int64_t":$clusters, "int64_t":$pp, "int64_t":$dp,
                        "int64_t":$micro_batch_size, "int64_t":$micro_batches,
                        "int64_t":$zero,
                        "::mlir::DenseI64ArrayAttr":$stage_layers,
                        "::mlir::StringAttr":$policy,
                        OptionalParameter<"::mlir::DenseI64ArrayAttr">:$stage_ranks,
                        OptionalParameter<"::mlir::DenseI64ArrayAttr">:$replica_micro_batches,
                        OptionalParameter<"::mlir::BoolAttr">:$replica_major,
                        OptionalParameter<"::mlir::DenseF64ArrayAttr">:$rank_slowdown);
  let assemblyFormat = "`<` struct(params) `>`";
}

#endif // RATRAIN_MT3K_ATTRS_TD
