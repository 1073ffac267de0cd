//===- MT3KToEmitC.cpp - Patterns from mt3k ops to helper calls
//------------===//
//
// One conversion pattern per mt3k op: the op becomes one `emitc.call_opaque`
// (a few for a ZeRO init_param) of a helper of ratrain/runtime/
// EmittedProgram.h, its buffer and token operands the C++ values of their
// defining ops (the type converter: !mt3k.buffer -> Tensor, !mt3k.token ->
// Token), its sizes and attributes constant arguments. The ops sit in their
// stage's emitc.func already (EmitCppStage.cpp), whose parameters are the
// Runtime & and the Session &. Modelled on MLIR's MemRefToEmitC. See
// docs/emitter.md.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Target/EmitCpp.h"

#include "EmitCppInternal.h"

#include "MT3K/MT3KDialect.h"
#include "MT3K/MT3KOps.h"
#include "MT3K/MT3KTypes.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Transforms/DialectConversion.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace ratrain;
using namespace ratrain::mt3k;
using namespace ratrain::emitc_cpp;

namespace {

StringRef elemTypeName(Type type) {
  if (type.isF32())
    return "ratrain::rt::ElemType::F32";
  if (type.isBF16())
    return "ratrain::rt::ElemType::BF16";
  if (type.isF16())
    return "ratrain::rt::ElemType::F16";
  if (type.isInteger(32))
    return "ratrain::rt::ElemType::I32";
  if (type.isInteger(64))
    return "ratrain::rt::ElemType::I64";
  return "ratrain::rt::ElemType::U8";
}

StringRef reduceName(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::sum:
    return "ratrain::rt::ReduceOp::Sum";
  case ReduceKind::avg:
    return "ratrain::rt::ReduceOp::Avg";
  case ReduceKind::max:
    return "ratrain::rt::ReduceOp::Max";
  case ReduceKind::min:
    return "ratrain::rt::ReduceOp::Min";
  }
  return "";
}

StringRef algorithmName(mt3k::CollectiveAlgorithm algorithm) {
  switch (algorithm) {
  case mt3k::CollectiveAlgorithm::ring:
    return "ratrain::rt::CollectiveAlgorithm::Ring";
  case mt3k::CollectiveAlgorithm::tree:
    return "ratrain::rt::CollectiveAlgorithm::Tree";
  case mt3k::CollectiveAlgorithm::hierarchical:
    return "ratrain::rt::CollectiveAlgorithm::Hierarchical";
  }
  return "";
}

StringRef initKindName(StringRef kind) {
  if (kind == "zeros")
    return "ratrain::rt::InitKind::Zeros";
  if (kind == "ones")
    return "ratrain::rt::InitKind::Ones";
  if (kind == "normal")
    return "ratrain::rt::InitKind::Normal";
  return "";
}

} // namespace

StringRef ratrain::emitc_cpp::tierName(mt3k::StorageTier tier) {
  return tier == mt3k::StorageTier::host ? "ratrain::rt::StorageTier::Host"
                                         : "ratrain::rt::StorageTier::Storage";
}

/// `v` as a C++ literal that reads back as the same double.
static std::string exactDouble(double v) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", v);
  std::string literal = text;
  if (literal.find_first_of(".en") == std::string::npos)
    literal += ".0";
  return literal;
}

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<BufferType>(v.getType()).getShape();
}
static int64_t numel(Value v) {
  return cast<BufferType>(v.getType()).getNumElements();
}
static int64_t bytesOf(Value v) {
  return cast<BufferType>(v.getType()).getSizeInBytes();
}

namespace {

/// What a lowering emits its helper calls with: the rewriter, the stage
/// function's Runtime & and Session &, constants, and the C++ values of the
/// op's results (`mapping`).
class Calls {
public:
  Calls(Operation *op, ConversionPatternRewriter &rewriter)
      : op(op), rewriter(rewriter), ctx(op->getContext()) {
    tensorType = emitc::OpaqueType::get(ctx, kTensorType);
    tokenType = emitc::OpaqueType::get(ctx, kTokenType);
  }

  // Constants printed into the call.
  Attribute opaque(StringRef text) { return emitc::OpaqueAttr::get(ctx, text); }
  Attribute i64(int64_t v) { return rewriter.getI64IntegerAttr(v); }
  Attribute f64(double v) { return rewriter.getF64FloatAttr(v); }
  Attribute boolean(bool v) { return rewriter.getBoolAttr(v); }
  Attribute str(StringRef s) { return opaque(cppString(s)); }
  Attribute elemType(Value v) {
    return opaque(elemTypeName(cast<BufferType>(v.getType()).getElementType()));
  }

  /// Emits `callee(args...)` before the op; returns its result when `result`
  /// is set.
  Value call(StringRef callee, Type result, ArrayRef<Arg> args) {
    return emitCall(rewriter, op->getLoc(), callee, result, args);
  }
  /// The C++ value of an mt3k value.
  Value get(Value v) { return rewriter.getRemappedValue(v); }
  Value runtime() { return function().getArgument(0); }
  Value session() { return function().getArgument(1); }
  /// The runtime's group of an mt3k.group; an error (and `failedGroup`) when
  /// `symbol` names none.
  Arg group(Operation *user, FlatSymbolRefAttr symbol);

  Type tensorType, tokenType;
  /// The op's results -> their C++ values.
  DenseMap<Value, Value> mapping;
  bool failedGroup = false;

private:
  emitc::FuncOp function() { return op->getParentOfType<emitc::FuncOp>(); }

  Operation *op;
  ConversionPatternRewriter &rewriter;
  MLIRContext *ctx;
};

Arg Calls::group(Operation *user, FlatSymbolRefAttr symbol) {
  auto groupOp = SymbolTable::lookupNearestSymbolFrom<GroupOp>(user, symbol);
  if (!groupOp) {
    user->emitOpError() << "names no mt3k.group " << symbol;
    failedGroup = true;
    return Arg(opaque("ratrain::rt::Group::World"));
  }
  switch (groupOp.getKind()) {
  case GroupKind::data_parallel:
    return Arg(opaque("ratrain::rt::Group::Data"));
  case GroupKind::pipeline:
    return Arg(opaque("ratrain::rt::Group::Pipeline"));
  case GroupKind::node_local:
    return Arg(opaque("ratrain::rt::Group::NodeLocal"));
  case GroupKind::world:
    return Arg(opaque("ratrain::rt::Group::World"));
  case GroupKind::data_inside:
  case GroupKind::data_across:
    return Arg(opaque(llvm::formatv("ratrain::rt::Group::Data{0}{1}",
                                    groupOp.getKind() == GroupKind::data_inside
                                        ? "Inside"
                                        : "Across",
                                    groupOp.getLevel().value_or(0))
                          .str()));
  }
  return Arg(opaque("ratrain::rt::Group::World"));
}

//===----------------------------------------------------------------------===//
// One lowering per op
//===----------------------------------------------------------------------===//

/// mt3k.buffer: a Tensor over the arena range of its memory space.
LogicalResult lower(BufferOp buffer, Calls &c) {
  Arg rt(c.runtime());
  auto type = cast<BufferType>(buffer.getType());
  StringRef fn = type.getSpace() == MemorySpace::ddr ? "ratrain::rt::emit::ddr"
                 : type.getSpace() == MemorySpace::gsm
                     ? "ratrain::rt::emit::gsm"
                     : "ratrain::rt::emit::am";
  c.mapping[buffer.getResult()] =
      c.call(fn, c.tensorType,
             {rt, c.i64(buffer.getOffset()), c.i64(type.getSizeInBytes()),
              c.elemType(buffer.getResult())});
  return success();
}

/// mt3k.view: a slice of its source.
LogicalResult lower(ViewOp view, Calls &c) {
  auto t = [&](Value v) { return Arg(c.get(v)); };
  c.mapping[view.getResult()] =
      c.call("ratrain::rt::emit::view", c.tensorType,
             {t(view.getSource()), c.i64(view.getByteOffset()),
              c.i64(bytesOf(view.getResult())), c.elemType(view.getResult())});
  return success();
}

/// mt3k.group_slot: the running rank's block of its source, the offset
/// computed at run time from the rank's index in the group.
LogicalResult lower(GroupSlotOp slot, Calls &c) {
  Operation *op = slot;
  auto t = [&](Value v) { return Arg(c.get(v)); };
  c.mapping[slot.getResult()] = c.call(
      "ratrain::rt::emit::groupSlot", c.tensorType,
      {Arg(c.runtime()), c.group(op, slot.getGroupAttr()), t(slot.getSource()),
       c.i64(bytesOf(slot.getResult())), c.elemType(slot.getResult())});
  return success();
}

/// mt3k.init_param, whole or (ZeRO) as this data rank's shard.
LogicalResult lower(InitParamOp init, Calls &c) {
  Operation *op = init;
  auto t = [&](Value v) { return Arg(c.get(v)); };
  Arg rt(c.runtime());
  StringRef kind = initKindName(stringifyInitKind(init.getKind()));
  double std = init.getStd() ? init.getStd()->convertToDouble() : 0.0;
  auto shard = init.getDpShardAttr();
  auto tensors = init.getDpShardTensorsAttr();
  // A streamed shard is initialized piece by piece: elements
  // [dp_shard_offset, + the destination's) of this rank's shard.
  SmallVector<Arg, 1> pieceOffset;
  if (auto offset = init.getDpShardOffsetAttr())
    pieceOffset.push_back(c.i64(offset.getInt()));
  if (shard && tensors) {
    // "name:offset:numel:init" per tensor of the flattened layer.
    for (Attribute entry : tensors) {
      auto text = dyn_cast<StringAttr>(entry);
      SmallVector<StringRef> parts;
      if (text)
        llvm::SplitString(text.getValue(), parts, ":");
      int64_t offset = 0, count = 0;
      if (!text || parts.size() != 4 || parts[1].getAsInteger(10, offset) ||
          parts[2].getAsInteger(10, count) || initKindName(parts[3]).empty())
        return op->emitOpError("malformed ratrain.dp_shard_tensors entry ")
               << entry;
      SmallVector<Arg> args = {rt,
                               t(init.getDest()),
                               c.str(parts[0]),
                               c.i64(offset),
                               c.i64(count),
                               c.opaque(initKindName(parts[3])),
                               c.f64(std),
                               c.i64(shard.getInt())};
      llvm::append_range(args, pieceOffset);
      c.call("ratrain::rt::emit::initShardTensor", Type(), args);
    }
    return success();
  }
  if (shard) {
    SmallVector<Arg> args = {rt,
                             t(init.getDest()),
                             c.opaque(kind),
                             c.str(init.getParam()),
                             c.f64(std),
                             c.i64(shard.getInt())};
    llvm::append_range(args, pieceOffset);
    c.call("ratrain::rt::emit::initShard", Type(), args);
    return success();
  }
  c.call("ratrain::rt::emit::initParam", Type(),
         {t(init.getDest()), c.opaque(kind), c.str(init.getParam()), c.f64(std),
          c.i64(init.getElementOffset().value_or(0))});
  return success();
}

LogicalResult lower(GemmOp gemm, Calls &c) {
  Operation *op = gemm;
  auto t = [&](Value v) { return Arg(c.get(v)); };
  ArrayRef<int64_t> a = shapeOf(gemm.getA()), bs = shapeOf(gemm.getB());
  int64_t M, N, K;
  StringRef form;
  if (gemm.getTransposeA() && gemm.getTransposeB())
    return op->emitOpError("has no host kernel: transpose_a with transpose_b");
  if (gemm.getTransposeB()) {
    form = "ratrain::kernels::GemmForm::NT";
    M = a[0], K = a[1], N = bs[0];
  } else if (gemm.getTransposeA()) {
    form = "ratrain::kernels::GemmForm::TN";
    K = a[0], M = a[1], N = bs[1];
  } else {
    form = "ratrain::kernels::GemmForm::NN";
    M = a[0], K = a[1], N = bs[1];
  }
  double alpha = gemm.getAlpha() ? gemm.getAlpha()->convertToDouble() : 1.0;
  c.call("ratrain::rt::emit::gemm", Type(),
         {t(gemm.getA()), t(gemm.getB()), t(gemm.getC()), c.opaque(form),
          c.i64(M), c.i64(N), c.i64(K), c.boolean(gemm.getAccumulate()),
          c.f64(alpha)});
  return success();
}

LogicalResult lower(AttentionFwdOp attn, Calls &c) {
  Operation *op = attn;
  auto t = [&](Value v) { return Arg(c.get(v)); };
  if (!attn.getCausal())
    return op->emitOpError("has no host kernel: attention without causal");
  ArrayRef<int64_t> q = shapeOf(attn.getQ()), kv = shapeOf(attn.getK());
  double scale = attn.getScale() ? attn.getScale()->convertToDouble()
                                 : 1.0 / std::sqrt(double(q[3]));
  c.call("ratrain::rt::emit::attentionFwd", Type(),
         {t(attn.getQ()), t(attn.getK()), t(attn.getV()), t(attn.getO()),
          t(attn.getLse()), c.i64(q[0]), c.i64(q[1]), c.i64(q[2]), c.i64(kv[2]),
          c.i64(q[3]), c.f64(scale), c.boolean(attn.getAlibi()),
          c.i64(attn.getWindow().value_or(0))});
  return success();
}

LogicalResult lower(AttentionBwdOp attn, Calls &c) {
  Operation *op = attn;
  auto t = [&](Value v) { return Arg(c.get(v)); };
  if (!attn.getCausal())
    return op->emitOpError("has no host kernel: attention without causal");
  ArrayRef<int64_t> q = shapeOf(attn.getQ()), kv = shapeOf(attn.getK());
  double scale = attn.getScale() ? attn.getScale()->convertToDouble()
                                 : 1.0 / std::sqrt(double(q[3]));
  c.call("ratrain::rt::emit::attentionBwd", Type(),
         {t(attn.getQ()), t(attn.getK()), t(attn.getV()), t(attn.getO()),
          t(attn.getDO()), t(attn.getLse()), t(attn.getDq()), t(attn.getDk()),
          t(attn.getDv()), c.i64(q[0]), c.i64(q[1]), c.i64(q[2]), c.i64(kv[2]),
          c.i64(q[3]), c.f64(scale), c.boolean(attn.getAlibi()),
          c.i64(attn.getWindow().value_or(0))});
  return success();
}

LogicalResult lower(RMSNormFwdOp norm, Calls &c) {
  auto t = [&](Value v) { return Arg(c.get(v)); };
  ArrayRef<int64_t> x = shapeOf(norm.getX());
  c.call("ratrain::rt::emit::rmsnormFwd", Type(),
         {t(norm.getX()), t(norm.getWeight()), t(norm.getY()),
          t(norm.getRstd()), c.i64(x[0]), c.i64(x[1]),
          c.f64(norm.getEps().convertToDouble())});
  return success();
}

LogicalResult lower(RMSNormBwdOp norm, Calls &c) {
  auto t = [&](Value v) { return Arg(c.get(v)); };
  ArrayRef<int64_t> x = shapeOf(norm.getX());
  c.call("ratrain::rt::emit::rmsnormBwd", Type(),
         {t(norm.getX()), t(norm.getWeight()), t(norm.getRstd()),
          t(norm.getDy()), t(norm.getDx()), t(norm.getDweight()), c.i64(x[0]),
          c.i64(x[1]), c.boolean(norm.getAccumulate())});
  return success();
}

/// mt3k.elementwise, by kind.
LogicalResult lower(ElementwiseOp ew, Calls &c) {
  Operation *op = ew;
  auto t = [&](Value v) { return Arg(c.get(v)); };
  auto in = ew.getInputs();
  auto out = ew.getOutputs();
  auto rows = [&](Value v) {
    ArrayRef<int64_t> s = shapeOf(v);
    int64_t last = s.empty() ? 1 : s.back();
    return std::make_pair(numel(v) / last, last);
  };
  switch (ew.getKind()) {
  case ElementwiseKind::swiglu: {
    auto [T, F] = rows(out[0]);
    c.call("ratrain::rt::emit::swiglu", Type(),
           {t(in[0]), t(in[1]), t(out[0]), c.i64(T), c.i64(F)});
    return success();
  }
  case ElementwiseKind::swiglu_bwd: {
    auto [T, F] = rows(out[0]);
    c.call("ratrain::rt::emit::swigluBwd", Type(),
           {t(in[0]), t(in[1]), t(in[2]), t(out[0]), t(out[1]), c.i64(T),
            c.i64(F)});
    return success();
  }
  case ElementwiseKind::residual_add:
    c.call("ratrain::rt::emit::residualAdd", Type(),
           {t(in[0]), t(in[1]), t(out[0])});
    return success();
  case ElementwiseKind::rope:
  case ElementwiseKind::rope_bwd: {
    ArrayRef<int64_t> s = shapeOf(in[0]);
    if (s.size() != 4)
      return op->emitOpError("rope operands must be [batch, seq, heads, dim]");
    SmallVector<Arg> args = {
        t(in[0]),
        t(out[0]),
        c.i64(s[0]),
        c.i64(s[1]),
        c.i64(s[2]),
        c.i64(s[3]),
        c.f64(ew.getTheta()->convertToDouble()),
        c.boolean(ew.getKind() == ElementwiseKind::rope_bwd)};
    // A scaled RoPE passes its ratrain::RopeScaling.
    if (RopeScalingAttr scaling = ew.getRopeScalingAttr()) {
      ratrain::RopeScaling value = scaling.getScaling();
      args.push_back(c.opaque(
          llvm::formatv(
              "ratrain::RopeScaling{{ratrain::RopeScalingKind::{0}, {1}, {2}, "
              "{3}, "
              "{4}}",
              value.kind == ratrain::RopeScalingKind::Linear ? "Linear"
                                                             : "Llama3",
              exactDouble(value.factor), exactDouble(value.lowFreqFactor),
              exactDouble(value.highFreqFactor), value.originalMaxPositions)
              .str()));
    }
    c.call("ratrain::rt::emit::rope", Type(), args);
    return success();
  }
  case ElementwiseKind::embedding: {
    ArrayRef<int64_t> table = shapeOf(in[0]);
    c.call("ratrain::rt::emit::embedding", Type(),
           {t(in[0]), t(in[1]), t(out[0]), c.i64(numel(in[1])), c.i64(table[0]),
            c.i64(table[1])});
    return success();
  }
  case ElementwiseKind::embedding_bwd: {
    ArrayRef<int64_t> table = shapeOf(out[0]);
    c.call("ratrain::rt::emit::embeddingBwd", Type(),
           {t(in[0]), t(in[1]), t(out[0]), c.i64(numel(in[0])), c.i64(table[0]),
            c.i64(table[1])});
    return success();
  }
  case ElementwiseKind::cross_entropy: {
    auto [T, V] = rows(in[0]);
    c.call("ratrain::rt::emit::crossEntropy", Type(),
           {t(in[0]), t(in[1]), t(out[0]), c.i64(T), c.i64(V)});
    return success();
  }
  case ElementwiseKind::cross_entropy_bwd: {
    auto [T, V] = rows(in[0]);
    double scale = ew.getScale() ? ew.getScale()->convertToDouble() : 1.0;
    c.call("ratrain::rt::emit::crossEntropyBwd", Type(),
           {t(in[0]), t(in[1]), t(out[0]), c.i64(T), c.i64(V), c.f64(scale)});
    return success();
  }
  case ElementwiseKind::cast:
    c.call("ratrain::rt::emit::cast", Type(), {t(in[0]), t(out[0])});
    return success();
  case ElementwiseKind::scale:
    c.call("ratrain::rt::emit::scale", Type(),
           {t(in[0]), t(out[0]), c.f64(ew.getScale()->convertToDouble())});
    return success();
  }
  return op->emitOpError("unknown elementwise kind");
}

LogicalResult lower(AdamWOp adam, Calls &c) {
  auto t = [&](Value v) { return Arg(c.get(v)); };
  Arg sess(c.session());
  double gradScale =
      adam.getGradScale() ? adam.getGradScale()->convertToDouble() : 1.0;
  SmallVector<Arg> args = {sess,
                           t(adam.getGrad()),
                           t(adam.getMaster()),
                           t(adam.getM()),
                           t(adam.getV()),
                           t(adam.getView()),
                           c.f64(adam.getLr().convertToDouble()),
                           c.f64(adam.getBeta1().convertToDouble()),
                           c.f64(adam.getBeta2().convertToDouble()),
                           c.f64(adam.getEps().convertToDouble()),
                           c.f64(adam.getWeightDecay().convertToDouble()),
                           c.f64(gradScale)};
  // The elements without weight decay: ratrain::rt::emit::NoDecay{first,
  // shard, {begin, end, ...}}.
  std::optional<Arg> noDecay;
  if (std::optional<ArrayRef<int64_t>> ranges = adam.getNoDecay()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "ratrain::rt::emit::NoDecay{" << *adam.getFirstElement() << ", "
       << adam.getShardElements().value_or(0) << ", {";
    llvm::interleaveComma(*ranges, os);
    os << "}}";
    noDecay = Arg(c.opaque(text));
  }
  if (Value own = adam.getOwn()) {
    // The gradient in two parts (a reduce-scatter with leave_own): the
    // other members' sum, this rank's part and the member count lead.
    args.insert(args.begin() + 2, {t(own), c.i64(*adam.getMembers())});
    if (noDecay)
      args.push_back(*noDecay);
    c.call("ratrain::rt::emit::adamwAveraged", Type(), args);
    return success();
  }
  if (!adam.getClip()) {
    if (noDecay)
      args.push_back(*noDecay);
    c.call("ratrain::rt::emit::adamw", Type(), args);
    return success();
  }
  args.push_back(t(adam.getClip()));
  args.push_back(c.f64(adam.getMaxGradNorm()->convertToDouble()));
  if (noDecay)
    args.push_back(*noDecay);
  c.call("ratrain::rt::emit::adamwClipped", Type(), args);
  return success();
}

LogicalResult lower(SumSquaresOp op, Calls &c) {
  c.call("ratrain::rt::emit::sumSquares", Type(),
         {Arg(c.get(op.getSource())), Arg(c.get(op.getAcc())),
          c.f64(op.getWeight().convertToDouble())});
  return success();
}

LogicalResult lower(FillOp fill, Calls &c) {
  auto t = [&](Value v) { return Arg(c.get(v)); };
  c.call("ratrain::rt::emit::fill", Type(),
         {t(fill.getDest()), c.f64(fill.getValue().convertToDouble())});
  return success();
}

LogicalResult lower(DmaOp dma, Calls &c) {
  auto t = [&](Value v) { return Arg(c.get(v)); };
  Arg rt(c.runtime());
  c.mapping[dma.getToken()] =
      c.call("ratrain::rt::emit::dma", c.tokenType,
             {rt, t(dma.getSource()), t(dma.getDest()),
              c.i64(dma.getCore() ? int64_t(*dma.getCore()) : 0),
              c.i64(dma.getChannel() ? int64_t(*dma.getChannel()) : -1)});
  return success();
}

LogicalResult lower(AllReduceOp ar, Calls &c) {
  Operation *op = ar;
  auto t = [&](Value v) { return Arg(c.get(v)); };
  Arg rt(c.runtime());
  SmallVector<Arg> args = {rt,
                           c.group(op, ar.getGroupAttr()),
                           t(ar.getSource()),
                           t(ar.getDest()),
                           c.opaque(reduceName(ar.getReduce())),
                           c.opaque(algorithmName(ar.getAlgorithm()))};
  if (std::optional<uint64_t> period = ar.getPeriod()) {
    // Only in the steps of its phase (partial synchronization).
    args.insert(args.begin() + 1, Arg(c.session()));
    args.push_back(c.i64(int64_t(*period)));
    args.push_back(c.i64(int64_t(*ar.getPhase())));
    c.mapping[ar.getToken()] =
        c.call("ratrain::rt::emit::periodicAllReduce", c.tokenType, args);
    return success();
  }
  c.mapping[ar.getToken()] =
      c.call("ratrain::rt::emit::allReduce", c.tokenType, args);
  return success();
}

/// The runtime's name of a quantized wire type.
StringRef wireName(mt3k::WireType wire) {
  return wire == mt3k::WireType::int4 ? "ratrain::rt::WireType::Int4"
                                      : "ratrain::rt::WireType::Int8";
}

LogicalResult lower(ReduceScatterOp rs, Calls &c) {
  Operation *op = rs;
  auto t = [&](Value v) { return Arg(c.get(v)); };
  Arg rt(c.runtime());
  SmallVector<Arg> args = {rt,
                           c.group(op, rs.getGroupAttr()),
                           t(rs.getSource()),
                           t(rs.getDest()),
                           c.opaque(reduceName(rs.getReduce())),
                           c.opaque(algorithmName(rs.getAlgorithm()))};
  // A quantized wire is an extra argument; native calls stay as they were.
  if (std::optional<mt3k::WireType> wire = rs.getWire())
    args.push_back(c.opaque(wireName(*wire)));
  c.mapping[rs.getToken()] =
      c.call(rs.getLeaveOwn() ? "ratrain::rt::emit::reduceScatterLeavingOwn"
                              : "ratrain::rt::emit::reduceScatter",
             c.tokenType, args);
  return success();
}

LogicalResult lower(AllGatherOp ag, Calls &c) {
  Operation *op = ag;
  auto t = [&](Value v) { return Arg(c.get(v)); };
  Arg rt(c.runtime());
  SmallVector<Arg> args = {rt, c.group(op, ag.getGroupAttr()),
                           t(ag.getSource()), t(ag.getDest()),
                           c.opaque(algorithmName(ag.getAlgorithm()))};
  if (std::optional<mt3k::WireType> wire = ag.getWire())
    args.push_back(c.opaque(wireName(*wire)));
  c.mapping[ag.getToken()] =
      c.call("ratrain::rt::emit::allGather", c.tokenType, args);
  return success();
}

LogicalResult lower(BroadcastOp bc, Calls &c) {
  Operation *op = bc;
  auto t = [&](Value v) { return Arg(c.get(v)); };
  Arg rt(c.runtime());
  c.mapping[bc.getToken()] = c.call("ratrain::rt::emit::broadcast", c.tokenType,
                                    {rt, c.group(op, bc.getGroupAttr()),
                                     t(bc.getBuffer()), c.i64(bc.getRoot())});
  return success();
}

/// mt3k.send / mt3k.recv: `callee(rt, group, peer, tag, buffer)`, a token.
template <typename TransferOp>
LogicalResult lowerTransfer(TransferOp transfer, StringRef callee, Calls &c) {
  Operation *op = transfer;
  c.mapping[transfer.getToken()] =
      c.call(callee, c.tokenType,
             {Arg(c.runtime()), c.group(op, transfer.getGroupAttr()),
              c.i64(transfer.getPeer()), c.i64(transfer.getTag()),
              Arg(c.get(transfer.getBuffer()))});
  return success();
}

LogicalResult lower(SendOp send, Calls &c) {
  std::optional<uint64_t> putOffset = send.getPutOffset();
  if (!putOffset)
    return lowerTransfer(send, "ratrain::rt::emit::send", c);
  Operation *op = send;
  c.mapping[send.getToken()] =
      c.call("ratrain::rt::emit::put", c.tokenType,
             {Arg(c.runtime()), c.group(op, send.getGroupAttr()),
              c.i64(send.getPeer()), c.i64(send.getTag()),
              Arg(c.get(send.getBuffer())), c.i64(int64_t(*putOffset))});
  return success();
}

LogicalResult lower(RecvOp recv, Calls &c) {
  return lowerTransfer(recv,
                       recv.getOneSided() ? "ratrain::rt::emit::arrival"
                                          : "ratrain::rt::emit::recv",
                       c);
}

LogicalResult lower(BarrierOp barrier, Calls &c) {
  Operation *op = barrier;
  Arg rt(c.runtime());
  c.call("ratrain::rt::emit::barrier", Type(),
         {rt, c.group(op, barrier.getGroupAttr())});
  return success();
}

LogicalResult lower(OffloadOp off, Calls &c) {
  auto t = [&](Value v) { return Arg(c.get(v)); };
  Arg rt(c.runtime());
  c.mapping[off.getToken()] =
      c.call("ratrain::rt::emit::offload", c.tokenType,
             {rt, t(off.getSource()), c.opaque(tierName(off.getTier())),
              c.str(off.getKey())});
  return success();
}

LogicalResult lower(ReloadOp rel, Calls &c) {
  auto t = [&](Value v) { return Arg(c.get(v)); };
  Arg rt(c.runtime());
  c.mapping[rel.getToken()] =
      c.call("ratrain::rt::emit::reload", c.tokenType,
             {rt, t(rel.getDest()), c.opaque(tierName(rel.getTier())),
              c.str(rel.getKey())});
  return success();
}

/// mt3k.wait: nothing for no tokens.
LogicalResult lower(WaitOp wait, Calls &c) {
  auto t = [&](Value v) { return Arg(c.get(v)); };
  Arg rt(c.runtime());
  if (wait.getTokens().empty())
    return success();
  SmallVector<Arg> args{rt};
  for (Value token : wait.getTokens())
    args.push_back(t(token));
  c.call("ratrain::rt::emit::wait", Type(), args);
  return success();
}

LogicalResult lower(LoadBatchOp load, Calls &c) {
  auto t = [&](Value v) { return Arg(c.get(v)); };
  Arg sess(c.session());
  c.call("ratrain::rt::emit::loadBatch", Type(),
         {sess,
          c.opaque(load.getField() == BatchField::inputs
                       ? "ratrain::rt::BatchField::Inputs"
                       : "ratrain::rt::BatchField::Labels"),
          t(load.getDest()), c.i64(load.getMicroBatch())});
  return success();
}

LogicalResult lower(ReportLossOp report, Calls &c) {
  auto t = [&](Value v) { return Arg(c.get(v)); };
  Arg sess(c.session());
  c.call("ratrain::rt::emit::reportLoss", Type(),
         {sess, t(report.getLoss()), c.i64(report.getMicroBatch())});
  return success();
}

/// mt3k.trace_begin: `traceBegin(rt, label, phase)`, a span of the per-op
/// trace (a branch when the run does not trace).
LogicalResult lower(TraceBeginOp begin, Calls &c) {
  const char *phase = "Other";
  switch (begin.getPhase()) {
  case TracePhase::forward:
    phase = "Forward";
    break;
  case TracePhase::backward:
    phase = "Backward";
    break;
  case TracePhase::recompute:
    phase = "Recompute";
    break;
  case TracePhase::update:
    phase = "Update";
    break;
  case TracePhase::view_cast:
    phase = "ViewCast";
    break;
  case TracePhase::other:
    break;
  }
  c.call("ratrain::rt::emit::traceBegin", Type(),
         {Arg(c.runtime()), c.str(begin.getLabel()),
          c.opaque((Twine("ratrain::rt::TracePhase::") + phase).str())});
  return success();
}

LogicalResult lower(TraceEndOp, Calls &c) {
  c.call("ratrain::rt::emit::traceEnd", Type(), {Arg(c.runtime())});
  return success();
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// mt3k op -> the helper calls of its lower() overload. An op whose lowering
/// reports an error becomes a call of kFailedCallee (the conversion
/// completes with the op's own error, and the pass fails).
template <typename OpTy> struct Lowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // The ops of this one's lowering (inserted before it) keep its
    // micro-batch guard for wrapMicroBatchGuards.
    Operation *previous = op->getPrevNode();
    Block *block = op->getBlock();
    auto keepGuard = [&] {
      auto mb = op->template getAttrOfType<IntegerAttr>(kMicroBatchGuard);
      if (!mb)
        return;
      for (Operation *lowered = previous ? previous->getNextNode()
                                         : &block->front();
           lowered && lowered != op.getOperation();
           lowered = lowered->getNextNode())
        lowered->setAttr(kMicroBatchGuard, mb);
    };
    Calls calls(op, rewriter);
    if (failed(lower(op, calls)) || calls.failedGroup) {
      SmallVector<Type> types;
      if (failed(this->getTypeConverter()->convertTypes(op->getResultTypes(),
                                                        types)))
        return failure();
      rewriter.replaceOpWithNewOp<emitc::CallOpaqueOp>(op, types, kFailedCallee,
                                                       ValueRange());
      return success();
    }
    keepGuard();
    SmallVector<Value> results;
    for (Value result : op->getResults())
      results.push_back(calls.mapping.lookup(result));
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// A call of an outlined layer body under a micro-batch guard: the
/// emitc.call keeps the guard (func-to-emitc's own pattern drops it).
struct GuardedFuncCall : OpConversionPattern<func::CallOp> {
  GuardedFuncCall(TypeConverter &converter, MLIRContext *ctx)
      : OpConversionPattern(converter, ctx, /*benefit=*/2) {}

  LogicalResult
  matchAndRewrite(func::CallOp call, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto mb = call->getAttrOfType<IntegerAttr>(kMicroBatchGuard);
    if (!mb)
      return failure();
    SmallVector<Type> types;
    if (failed(getTypeConverter()->convertTypes(call.getResultTypes(), types)))
      return failure();
    auto lowered = rewriter.replaceOpWithNewOp<emitc::CallOp>(
        call, call.getCalleeAttr(), types, adaptor.getOperands());
    lowered->setAttr(kMicroBatchGuard, mb);
    return success();
  }
};

/// An emitc op that the stage function's structure gave mt3k operands (the
/// checkpoint registration) takes their C++ values.
template <typename OpTy> struct RemapOperands : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.modifyOpInPlace(op,
                             [&] { op->setOperands(adaptor.getOperands()); });
    return success();
  }
};

} // namespace

void ratrain::populateMT3KToEmitCTypeConversions(TypeConverter &converter) {
  converter.addConversion([](Type type) { return type; });
  converter.addConversion([](BufferType type) -> Type {
    return emitc::OpaqueType::get(type.getContext(), kTensorType);
  });
  converter.addConversion([](TokenType type) -> Type {
    return emitc::OpaqueType::get(type.getContext(), kTokenType);
  });
}

void ratrain::populateMT3KToEmitCPatterns(TypeConverter &converter,
                                          RewritePatternSet &patterns) {
  patterns.add<
      Lowering<BufferOp>, Lowering<ViewOp>, Lowering<GroupSlotOp>,
      Lowering<InitParamOp>, Lowering<GemmOp>, Lowering<AttentionFwdOp>,
      Lowering<AttentionBwdOp>, Lowering<RMSNormFwdOp>, Lowering<RMSNormBwdOp>,
      Lowering<ElementwiseOp>, Lowering<AdamWOp>, Lowering<SumSquaresOp>,
      Lowering<FillOp>, Lowering<DmaOp>, Lowering<AllReduceOp>,
      Lowering<ReduceScatterOp>, Lowering<AllGatherOp>, Lowering<BroadcastOp>,
      Lowering<SendOp>, Lowering<RecvOp>, Lowering<BarrierOp>,
      Lowering<OffloadOp>, Lowering<ReloadOp>, Lowering<WaitOp>,
      Lowering<LoadBatchOp>, Lowering<ReportLossOp>, Lowering<TraceBeginOp>,
      Lowering<TraceEndOp>, RemapOperands<emitc::CallOpaqueOp>,
      RemapOperands<emitc::VerbatimOp>, GuardedFuncCall>(converter,
                                                         patterns.getContext());
}

//===----------------------------------------------------------------------===//
// Micro-batch guards
//===----------------------------------------------------------------------===//

/// Whether `op` may move before a guarded run: a buffer or view of the
/// runtime (pure) whose operands are not the run's.
static bool isHoistableView(Operation *op,
                            const llvm::SmallPtrSetImpl<Operation *> &run) {
  auto call = dyn_cast<emitc::CallOpaqueOp>(op);
  if (!call || op->hasAttr(kMicroBatchGuard))
    return false;
  StringRef callee = call.getCallee();
  if (callee != "ratrain::rt::emit::view" &&
      callee != "ratrain::rt::emit::ddr" &&
      callee != "ratrain::rt::emit::gsm" && callee != "ratrain::rt::emit::am")
    return false;
  return llvm::none_of(op->getOperands(), [&](Value v) {
    return v.getDefiningOp() && run.contains(v.getDefiningOp());
  });
}

/// Wraps one run of ops guarded by micro-batch `mb` (in order, consecutive
/// but for the views hoisted out of it) in `if (runsMicroBatch(session,
/// mb)) { ... }`; each token the run defines and later code reads becomes a
/// variable, a completed token where the run does not run.
static LogicalResult wrapRun(ArrayRef<Operation *> run, int64_t mb,
                             Value session) {
  Operation *first = run.front();
  MLIRContext *ctx = first->getContext();
  Location loc = first->getLoc();
  OpBuilder b(first);
  llvm::SmallPtrSet<Operation *, 16> members(run.begin(), run.end());
  // The run's results read after it.
  SmallVector<Value> escaping;
  for (Operation *op : run)
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return !members.contains(user);
          }))
        escaping.push_back(result);
  auto tokenType = emitc::OpaqueType::get(ctx, kTokenType);
  SmallVector<Value> variables;
  for (Value value : escaping) {
    if (value.getType() != tokenType)
      return first->emitError("a value of type ")
             << value.getType() << " defined under the guard of micro-batch "
             << mb << " is read outside it";
    variables.push_back(emitc::VariableOp::create(
        b, loc, emitc::LValueType::get(tokenType),
        emitc::OpaqueAttr::get(ctx, "ratrain::rt::Token{}")));
  }
  Value runs = emitc::CallOpaqueOp::create(
                   b, loc, TypeRange(b.getI1Type()),
                   "ratrain::rt::emit::runsMicroBatch", ValueRange(session),
                   b.getArrayAttr({b.getIndexAttr(0), b.getI64IntegerAttr(mb)}))
                   .getResult(0);
  auto guard = emitc::IfOp::create(b, loc, runs, /*addThenBlock=*/false,
                                   /*addElseBlock=*/false);
  Block *then = b.createBlock(&guard.getThenRegion());
  auto yield = emitc::YieldOp::create(b, loc);
  for (Operation *op : run) {
    op->moveBefore(yield);
    op->removeAttr(kMicroBatchGuard);
  }
  b.setInsertionPoint(yield);
  for (auto [value, variable] : llvm::zip(escaping, variables))
    emitc::AssignOp::create(b, loc, variable, value);
  b.setInsertionPointAfter(guard);
  for (auto [value, variable] : llvm::zip(escaping, variables)) {
    Value loaded = emitc::LoadOp::create(b, loc, tokenType, variable);
    value.replaceUsesWithIf(loaded, [&](OpOperand &use) {
      return use.getOwner()->getBlock() != then;
    });
  }
  return success();
}

LogicalResult ratrain::wrapMicroBatchGuards(emitc::FuncOp function) {
  if (function.getBody().empty() || function.getNumArguments() < 2)
    return success();
  Value session = function.getArgument(1);
  Block &body = function.getBody().front();
  for (Operation *op = &body.front(); op;) {
    auto mb = op->getAttrOfType<IntegerAttr>(kMicroBatchGuard);
    if (!mb) {
      op = op->getNextNode();
      continue;
    }
    // The run: this op and the following ones of the same micro-batch,
    // views between them moved before it.
    SmallVector<Operation *> run;
    llvm::SmallPtrSet<Operation *, 16> members;
    Operation *next = op;
    while (next) {
      auto other = next->getAttrOfType<IntegerAttr>(kMicroBatchGuard);
      if (other && other.getInt() == mb.getInt()) {
        run.push_back(next);
        members.insert(next);
        next = next->getNextNode();
        continue;
      }
      if (isHoistableView(next, members)) {
        Operation *view = next;
        next = next->getNextNode();
        view->moveBefore(run.front());
        continue;
      }
      break;
    }
    if (failed(wrapRun(run, mb.getInt(), session)))
      return failure();
    op = next;
  }
  return success();
}
