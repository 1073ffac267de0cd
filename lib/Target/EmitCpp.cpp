//===- EmitCpp.cpp - mt3k programs to a C++ training program --------------===//
//
// mt3k -> emitc -> C++. Every mt3k value becomes a C++ variable: a buffer or
// view a `ratrain::rt::emit::Tensor` (runtime Buffer + element type), a
// token a `ratrain::rt::Token`. Every op becomes one `emitc.call_opaque` of a
// helper of ratrain/runtime/EmittedProgram.h, the one header the program
// includes. A stage's prologue runs once, the rest inside the Session's step
// loop; main() hands a description of the program (machine, model, plan,
// stages) to the runtime's entry point. See docs/emitter.md.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Target/EmitCpp.h"

#include "EmitCppInternal.h"

#include "MT3K/MT3KDialect.h"
#include "MT3K/MT3KOps.h"
#include "MT3K/MT3KTypes.h"
#include "RATrain/RATrainDialect.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Target/Cpp/CppEmitter.h"
#include "mlir/Tools/mlir-translate/Translation.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace ratrain;
using namespace ratrain::mt3k;
using ratrain::emitc_cpp::commentText;
using ratrain::emitc_cpp::cppString;
using ratrain::emitc_cpp::emitProgramDescription;

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

StringRef tierName(mt3k::StorageTier tier) {
  return tier == mt3k::StorageTier::host ? "ratrain::rt::StorageTier::Host"
                                         : "ratrain::rt::StorageTier::Storage";
}

/// One argument of a helper call: an mt3k value (mapped to its C++
/// variable) or a constant printed as-is.
struct Arg {
  Value value;
  Attribute attr;
  Arg(Value v) : value(v) {}
  Arg(Attribute a) : attr(a) {}
};

class Converter {
public:
  Converter(ModuleOp source, ModuleOp target)
      : source(source), ctx(source.getContext()), b(ctx) {
    b.setInsertionPointToEnd(target.getBody());
    tensorType = emitc::OpaqueType::get(ctx, "ratrain::rt::emit::Tensor");
    tokenType = emitc::OpaqueType::get(ctx, "ratrain::rt::Token");
  }

  LogicalResult run();

private:
  // Constants printed into the call.
  Attribute opaque(StringRef text) { return emitc::OpaqueAttr::get(ctx, text); }
  Attribute i64(int64_t v) { return b.getI64IntegerAttr(v); }
  Attribute f64(double v) { return b.getF64FloatAttr(v); }
  Attribute boolean(bool v) { return b.getBoolAttr(v); }
  Attribute str(StringRef s) { return opaque(cppString(s)); }
  Attribute elemType(Value v) {
    return opaque(elemTypeName(cast<BufferType>(v.getType()).getElementType()));
  }

  /// Emits `callee(args...)`; returns its result when `result` is set.
  Value call(Location loc, StringRef callee, Type result, ArrayRef<Arg> args) {
    SmallVector<Value> operands;
    SmallVector<Attribute> attrs;
    for (const Arg &arg : args) {
      if (arg.value) {
        attrs.push_back(b.getIndexAttr(operands.size()));
        operands.push_back(arg.value);
      } else {
        attrs.push_back(arg.attr);
      }
    }
    TypeRange results = result ? TypeRange(result) : TypeRange();
    auto op = emitc::CallOpaqueOp::create(b, loc, results, callee, operands,
                                          b.getArrayAttr(attrs));
    return result ? op.getResult(0) : Value();
  }

  /// The C++ variable of an mt3k value.
  Value get(Value v) { return mapping.lookup(v); }
  Arg group(Operation *op, FlatSymbolRefAttr symbol);

  LogicalResult convertProgram(ProgramOp program);
  /// Session::addParam for every parameter tensor the prologue initializes.
  void emitParams(ProgramOp program);
  LogicalResult convertOp(Operation *op);
  /// Drops what the C++ program would not use, so that it compiles without
  /// unused-variable warnings: a variable for a call result nothing reads
  /// (the call stays as a statement; an unused view goes) and unused
  /// parameters (voided).
  void dropUnusedResults(emitc::FuncOp func);

  ModuleOp source;
  MLIRContext *ctx;
  OpBuilder b;
  Type tensorType, tokenType;
  Value runtime, session;
  DenseMap<Value, Value> mapping;
  bool failedGroup = false;
};

Arg Converter::group(Operation *op, FlatSymbolRefAttr symbol) {
  auto groupOp = SymbolTable::lookupNearestSymbolFrom<GroupOp>(op, symbol);
  if (!groupOp) {
    op->emitOpError() << "names no mt3k.group " << symbol;
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
  }
  return Arg(opaque("ratrain::rt::Group::World"));
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

LogicalResult Converter::convertOp(Operation *op) {
  Location loc = op->getLoc();
  auto t = [&](Value v) { return Arg(get(v)); };
  Arg rt(runtime), sess(session);

  if (auto buffer = dyn_cast<BufferOp>(op)) {
    auto type = cast<BufferType>(buffer.getType());
    StringRef fn =
        type.getSpace() == MemorySpace::ddr   ? "ratrain::rt::emit::ddr"
        : type.getSpace() == MemorySpace::gsm ? "ratrain::rt::emit::gsm"
                                              : "ratrain::rt::emit::am";
    mapping[buffer.getResult()] =
        call(loc, fn, tensorType,
             {rt, i64(buffer.getOffset()), i64(type.getSizeInBytes()),
              elemType(buffer.getResult())});
    return success();
  }
  if (auto view = dyn_cast<ViewOp>(op)) {
    mapping[view.getResult()] =
        call(loc, "ratrain::rt::emit::view", tensorType,
             {t(view.getSource()), i64(view.getByteOffset()),
              i64(bytesOf(view.getResult())), elemType(view.getResult())});
    return success();
  }
  if (auto init = dyn_cast<InitParamOp>(op)) {
    StringRef kind = initKindName(stringifyInitKind(init.getKind()));
    double std = init.getStd() ? init.getStd()->convertToDouble() : 0.0;
    auto shard = op->getAttrOfType<IntegerAttr>("ratrain.dp_shard");
    auto tensors = op->getAttrOfType<ArrayAttr>("ratrain.dp_shard_tensors");
    // A streamed shard is initialized piece by piece: elements
    // [ratrain.dp_shard_offset, + the destination's) of this rank's shard.
    SmallVector<Arg, 1> pieceOffset;
    if (auto offset = op->getAttrOfType<IntegerAttr>("ratrain.dp_shard_offset"))
      pieceOffset.push_back(i64(offset.getInt()));
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
        SmallVector<Arg> args = {
            rt,          t(init.getDest()),  str(parts[0]),
            i64(offset), i64(count),         opaque(initKindName(parts[3])),
            f64(std),    i64(shard.getInt())};
        llvm::append_range(args, pieceOffset);
        call(loc, "ratrain::rt::emit::initShardTensor", Type(), args);
      }
      return success();
    }
    if (shard) {
      SmallVector<Arg> args = {rt,           t(init.getDest()),
                               opaque(kind), str(init.getParam()),
                               f64(std),     i64(shard.getInt())};
      llvm::append_range(args, pieceOffset);
      call(loc, "ratrain::rt::emit::initShard", Type(), args);
      return success();
    }
    call(loc, "ratrain::rt::emit::initParam", Type(),
         {t(init.getDest()), opaque(kind), str(init.getParam()), f64(std),
          i64(init.getElementOffset().value_or(0))});
    return success();
  }

  // Kernels.
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    ArrayRef<int64_t> a = shapeOf(gemm.getA()), bs = shapeOf(gemm.getB());
    int64_t M, N, K;
    StringRef form;
    if (gemm.getTransposeA() && gemm.getTransposeB())
      return op->emitOpError(
          "has no host kernel: transpose_a with transpose_b");
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
    call(loc, "ratrain::rt::emit::gemm", Type(),
         {t(gemm.getA()), t(gemm.getB()), t(gemm.getC()), opaque(form), i64(M),
          i64(N), i64(K), boolean(gemm.getAccumulate()), f64(alpha)});
    return success();
  }
  if (auto attn = dyn_cast<AttentionFwdOp>(op)) {
    if (!attn.getCausal())
      return op->emitOpError("has no host kernel: attention without causal");
    ArrayRef<int64_t> q = shapeOf(attn.getQ()), kv = shapeOf(attn.getK());
    double scale = attn.getScale() ? attn.getScale()->convertToDouble()
                                   : 1.0 / std::sqrt(double(q[3]));
    call(loc, "ratrain::rt::emit::attentionFwd", Type(),
         {t(attn.getQ()), t(attn.getK()), t(attn.getV()), t(attn.getO()),
          t(attn.getLse()), i64(q[0]), i64(q[1]), i64(q[2]), i64(kv[2]),
          i64(q[3]), f64(scale), boolean(attn.getAlibi())});
    return success();
  }
  if (auto attn = dyn_cast<AttentionBwdOp>(op)) {
    if (!attn.getCausal())
      return op->emitOpError("has no host kernel: attention without causal");
    ArrayRef<int64_t> q = shapeOf(attn.getQ()), kv = shapeOf(attn.getK());
    double scale = attn.getScale() ? attn.getScale()->convertToDouble()
                                   : 1.0 / std::sqrt(double(q[3]));
    call(loc, "ratrain::rt::emit::attentionBwd", Type(),
         {t(attn.getQ()), t(attn.getK()), t(attn.getV()), t(attn.getO()),
          t(attn.getDO()), t(attn.getLse()), t(attn.getDq()), t(attn.getDk()),
          t(attn.getDv()), i64(q[0]), i64(q[1]), i64(q[2]), i64(kv[2]),
          i64(q[3]), f64(scale), boolean(attn.getAlibi())});
    return success();
  }
  if (auto norm = dyn_cast<RMSNormFwdOp>(op)) {
    ArrayRef<int64_t> x = shapeOf(norm.getX());
    call(loc, "ratrain::rt::emit::rmsnormFwd", Type(),
         {t(norm.getX()), t(norm.getWeight()), t(norm.getY()),
          t(norm.getRstd()), i64(x[0]), i64(x[1]),
          f64(norm.getEps().convertToDouble())});
    return success();
  }
  if (auto norm = dyn_cast<RMSNormBwdOp>(op)) {
    ArrayRef<int64_t> x = shapeOf(norm.getX());
    call(loc, "ratrain::rt::emit::rmsnormBwd", Type(),
         {t(norm.getX()), t(norm.getWeight()), t(norm.getRstd()),
          t(norm.getDy()), t(norm.getDx()), t(norm.getDweight()), i64(x[0]),
          i64(x[1]), boolean(norm.getAccumulate())});
    return success();
  }
  if (auto ew = dyn_cast<ElementwiseOp>(op)) {
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
      call(loc, "ratrain::rt::emit::swiglu", Type(),
           {t(in[0]), t(in[1]), t(out[0]), i64(T), i64(F)});
      return success();
    }
    case ElementwiseKind::swiglu_bwd: {
      auto [T, F] = rows(out[0]);
      call(
          loc, "ratrain::rt::emit::swigluBwd", Type(),
          {t(in[0]), t(in[1]), t(in[2]), t(out[0]), t(out[1]), i64(T), i64(F)});
      return success();
    }
    case ElementwiseKind::residual_add:
      call(loc, "ratrain::rt::emit::residualAdd", Type(),
           {t(in[0]), t(in[1]), t(out[0])});
      return success();
    case ElementwiseKind::rope:
    case ElementwiseKind::rope_bwd: {
      ArrayRef<int64_t> s = shapeOf(in[0]);
      if (s.size() != 4)
        return op->emitOpError(
            "rope operands must be [batch, seq, heads, dim]");
      call(loc, "ratrain::rt::emit::rope", Type(),
           {t(in[0]), t(out[0]), i64(s[0]), i64(s[1]), i64(s[2]), i64(s[3]),
            f64(ew.getTheta()->convertToDouble()),
            boolean(ew.getKind() == ElementwiseKind::rope_bwd)});
      return success();
    }
    case ElementwiseKind::embedding: {
      ArrayRef<int64_t> table = shapeOf(in[0]);
      call(loc, "ratrain::rt::emit::embedding", Type(),
           {t(in[0]), t(in[1]), t(out[0]), i64(numel(in[1])), i64(table[0]),
            i64(table[1])});
      return success();
    }
    case ElementwiseKind::embedding_bwd: {
      ArrayRef<int64_t> table = shapeOf(out[0]);
      call(loc, "ratrain::rt::emit::embeddingBwd", Type(),
           {t(in[0]), t(in[1]), t(out[0]), i64(numel(in[0])), i64(table[0]),
            i64(table[1])});
      return success();
    }
    case ElementwiseKind::cross_entropy: {
      auto [T, V] = rows(in[0]);
      call(loc, "ratrain::rt::emit::crossEntropy", Type(),
           {t(in[0]), t(in[1]), t(out[0]), i64(T), i64(V)});
      return success();
    }
    case ElementwiseKind::cross_entropy_bwd: {
      auto [T, V] = rows(in[0]);
      double scale = ew.getScale() ? ew.getScale()->convertToDouble() : 1.0;
      call(loc, "ratrain::rt::emit::crossEntropyBwd", Type(),
           {t(in[0]), t(in[1]), t(out[0]), i64(T), i64(V), f64(scale)});
      return success();
    }
    case ElementwiseKind::cast:
      call(loc, "ratrain::rt::emit::cast", Type(), {t(in[0]), t(out[0])});
      return success();
    case ElementwiseKind::scale:
      call(loc, "ratrain::rt::emit::scale", Type(),
           {t(in[0]), t(out[0]), f64(ew.getScale()->convertToDouble())});
      return success();
    }
    return op->emitOpError("unknown elementwise kind");
  }
  if (auto adam = dyn_cast<AdamWOp>(op)) {
    double gradScale =
        adam.getGradScale() ? adam.getGradScale()->convertToDouble() : 1.0;
    call(loc, "ratrain::rt::emit::adamw", Type(),
         {sess, t(adam.getGrad()), t(adam.getMaster()), t(adam.getM()),
          t(adam.getV()), t(adam.getView()),
          f64(adam.getLr().convertToDouble()),
          f64(adam.getBeta1().convertToDouble()),
          f64(adam.getBeta2().convertToDouble()),
          f64(adam.getEps().convertToDouble()),
          f64(adam.getWeightDecay().convertToDouble()), f64(gradScale)});
    return success();
  }
  if (auto fill = dyn_cast<FillOp>(op)) {
    call(loc, "ratrain::rt::emit::fill", Type(),
         {t(fill.getDest()), f64(fill.getValue().convertToDouble())});
    return success();
  }

  // Asynchronous data movement and communication.
  if (auto dma = dyn_cast<DmaOp>(op)) {
    mapping[dma.getToken()] =
        call(loc, "ratrain::rt::emit::dma", tokenType,
             {rt, t(dma.getSource()), t(dma.getDest()),
              i64(dma.getCore() ? int64_t(*dma.getCore()) : 0),
              i64(dma.getChannel() ? int64_t(*dma.getChannel()) : -1)});
    return success();
  }
  if (auto ar = dyn_cast<AllReduceOp>(op)) {
    mapping[ar.getToken()] =
        call(loc, "ratrain::rt::emit::allReduce", tokenType,
             {rt, group(op, ar.getGroupAttr()), t(ar.getSource()),
              t(ar.getDest()), opaque(reduceName(ar.getReduce())),
              opaque(algorithmName(ar.getAlgorithm()))});
    return success();
  }
  if (auto rs = dyn_cast<ReduceScatterOp>(op)) {
    mapping[rs.getToken()] =
        call(loc, "ratrain::rt::emit::reduceScatter", tokenType,
             {rt, group(op, rs.getGroupAttr()), t(rs.getSource()),
              t(rs.getDest()), opaque(reduceName(rs.getReduce()))});
    return success();
  }
  if (auto ag = dyn_cast<AllGatherOp>(op)) {
    mapping[ag.getToken()] = call(
        loc, "ratrain::rt::emit::allGather", tokenType,
        {rt, group(op, ag.getGroupAttr()), t(ag.getSource()), t(ag.getDest())});
    return success();
  }
  if (auto bc = dyn_cast<BroadcastOp>(op)) {
    mapping[bc.getToken()] =
        call(loc, "ratrain::rt::emit::broadcast", tokenType,
             {rt, group(op, bc.getGroupAttr()), t(bc.getBuffer()),
              i64(bc.getRoot())});
    return success();
  }
  if (auto send = dyn_cast<SendOp>(op)) {
    mapping[send.getToken()] =
        call(loc, "ratrain::rt::emit::send", tokenType,
             {rt, group(op, send.getGroupAttr()), i64(send.getPeer()),
              i64(send.getTag()), t(send.getBuffer())});
    return success();
  }
  if (auto recv = dyn_cast<RecvOp>(op)) {
    mapping[recv.getToken()] =
        call(loc, "ratrain::rt::emit::recv", tokenType,
             {rt, group(op, recv.getGroupAttr()), i64(recv.getPeer()),
              i64(recv.getTag()), t(recv.getBuffer())});
    return success();
  }
  if (auto barrier = dyn_cast<BarrierOp>(op)) {
    call(loc, "ratrain::rt::emit::barrier", Type(),
         {rt, group(op, barrier.getGroupAttr())});
    return success();
  }
  if (auto off = dyn_cast<OffloadOp>(op)) {
    mapping[off.getToken()] =
        call(loc, "ratrain::rt::emit::offload", tokenType,
             {rt, t(off.getSource()), opaque(tierName(off.getTier())),
              str(off.getKey())});
    return success();
  }
  if (auto rel = dyn_cast<ReloadOp>(op)) {
    mapping[rel.getToken()] =
        call(loc, "ratrain::rt::emit::reload", tokenType,
             {rt, t(rel.getDest()), opaque(tierName(rel.getTier())),
              str(rel.getKey())});
    return success();
  }
  if (auto wait = dyn_cast<WaitOp>(op)) {
    if (wait.getTokens().empty())
      return success();
    SmallVector<Arg> args{rt};
    for (Value token : wait.getTokens())
      args.push_back(t(token));
    call(loc, "ratrain::rt::emit::wait", Type(), args);
    return success();
  }

  // Session.
  if (auto load = dyn_cast<LoadBatchOp>(op)) {
    call(loc, "ratrain::rt::emit::loadBatch", Type(),
         {sess,
          opaque(load.getField() == BatchField::inputs
                     ? "ratrain::rt::BatchField::Inputs"
                     : "ratrain::rt::BatchField::Labels"),
          t(load.getDest()), i64(load.getMicroBatch())});
    return success();
  }
  if (auto report = dyn_cast<ReportLossOp>(op)) {
    call(loc, "ratrain::rt::emit::reportLoss", Type(),
         {sess, t(report.getLoss()), i64(report.getMicroBatch())});
    return success();
  }
  return op->emitOpError("cannot be translated to C++");
}

void Converter::emitParams(ProgramOp program) {
  // Per HF tensor name, from the prologue's init_params: the f32 master, a
  // 16-bit view, and the moments "<name>.exp_avg" / "<name>.exp_avg_sq".
  // ZeRO programs (ratrain.dp_shard) initialize per layer prefix the master,
  // m and v shards of the layer's flattened tensors, and per tensor the full
  // replicated view: each tensor is registered as the piece of it that falls
  // into this data rank's layer shard (computed at run time from dpIndex).
  struct Param {
    Value master, view, m, v;
  };
  struct LayerShard {
    Value master, m, v;
    int64_t elements = 0;
    ArrayAttr tensors;
  };
  llvm::MapVector<StringRef, Param> params;
  llvm::MapVector<StringRef, LayerShard> shards;
  // States the plan keeps in the offload tier live there between steps: a
  // checkpoint saves (and a resume loads) the tier copy, at the key and byte
  // offset the lowering put on the init_param.
  DenseMap<Value, Value> tierCopies;
  // A state streamed in chunks is offloaded in pieces `<key>@<offset>`,
  // which the host tier keeps in the one copy of `<key>`; an init of its
  // first piece of a tensor registers the whole tensor there
  // (ratrain.offload_bytes), those of later pieces (ratrain.offload_piece >
  // 0) are not registered.
  llvm::StringMap<OffloadOp> prologueOffloads;
  for (auto offload : program.getBodyBlock().getOps<OffloadOp>())
    if (offload->hasAttr("mt3k.prologue")) {
      prologueOffloads[offload.getKey()] = offload;
      auto [parent, offset] = offload.getKey().rsplit('@');
      uint64_t value;
      if (!offset.empty() && !offset.getAsInteger(10, value))
        prologueOffloads.try_emplace(parent, offload);
    }
  auto laterPiece = [](InitParamOp init) {
    auto piece = init->getAttrOfType<IntegerAttr>("ratrain.offload_piece");
    return piece && piece.getInt() > 0;
  };
  for (auto init : program.getBodyBlock().getOps<InitParamOp>()) {
    auto key = init->getAttrOfType<StringAttr>("ratrain.offload_key");
    auto offset = init->getAttrOfType<IntegerAttr>("ratrain.offload_offset");
    OffloadOp offload =
        key ? prologueOffloads.lookup(key.getValue()) : OffloadOp();
    if (!offload || !offset || laterPiece(init))
      continue;
    SmallVector<Arg> args = {Arg(runtime),
                             Arg(session),
                             Arg(get(init.getDest())),
                             opaque(tierName(offload.getTier())),
                             str(key.getValue()),
                             i64(offset.getInt())};
    if (auto bytes = init->getAttrOfType<IntegerAttr>("ratrain.offload_bytes"))
      args.push_back(i64(bytes.getInt()));
    tierCopies[init.getDest()] = call(
        program.getLoc(), "ratrain::rt::emit::offloaded", tensorType, args);
  }
  auto cpp = [&](Value v) {
    Value copy = tierCopies.lookup(v);
    return Arg(copy ? copy : get(v));
  };
  bool zero = llvm::any_of(
      program.getBodyBlock().getOps<InitParamOp>(),
      [](InitParamOp init) { return init->hasAttr("ratrain.dp_shard"); });
  for (auto init : program.getBodyBlock().getOps<InitParamOp>()) {
    if (laterPiece(init))
      continue;
    StringRef name = init.getParam();
    Value dest = init.getDest();
    if (auto shard = init->getAttrOfType<IntegerAttr>("ratrain.dp_shard")) {
      LayerShard *layer;
      if (name.consume_back(".exp_avg_sq")) {
        layer = &shards[name];
        layer->v = dest;
      } else if (name.consume_back(".exp_avg")) {
        layer = &shards[name];
        layer->m = dest;
      } else {
        layer = &shards[name];
        layer->master = dest;
        layer->tensors =
            init->getAttrOfType<ArrayAttr>("ratrain.dp_shard_tensors");
      }
      layer->elements = shard.getInt();
      continue;
    }
    if (name.consume_back(".exp_avg_sq"))
      params[name].v = dest;
    else if (name.consume_back(".exp_avg"))
      params[name].m = dest;
    else if (zero || !cast<BufferType>(dest.getType()).getElementType().isF32())
      params[name].view = dest;
    else
      params[name].master = dest;
  }
  auto shapeText = [](ArrayRef<int64_t> shape) {
    std::string text = "std::vector<int64_t>{";
    llvm::raw_string_ostream os(text);
    llvm::interleaveComma(shape, os);
    os << "}";
    return text;
  };
  bool commented = false;
  auto registerParam = [&](StringRef callee, ArrayRef<Arg> args) {
    if (!commented)
      emitc::VerbatimOp::create(
          b, program.getLoc(),
          "// parameters and Adam moments for checkpoints (Session::addParam)");
    commented = true;
    call(program.getLoc(), callee, Type(), args);
  };
  if (zero) {
    for (auto &[prefix, layer] : shards) {
      if (!layer.master || !layer.m || !layer.v || !layer.tensors)
        continue;
      // "name:offset:numel:init" per tensor of the flattened layer (checked
      // when the init_param was converted).
      for (Attribute entry : layer.tensors) {
        SmallVector<StringRef> parts;
        llvm::SplitString(cast<StringAttr>(entry).getValue(), parts, ":");
        int64_t offset = 0, count = 0;
        if (parts.size() != 4 || parts[1].getAsInteger(10, offset) ||
            parts[2].getAsInteger(10, count))
          continue;
        // The view holds the full tensor (its shape is the HF shape); an
        // F32 model's view is the tensor itself.
        auto it = params.find(parts[0]);
        Value view = it == params.end() ? Value() : it->second.view;
        if (!view)
          continue;
        registerParam("ratrain::rt::emit::addShardParam",
                      {Arg(session), Arg(runtime), str(parts[0]),
                       opaque(shapeText(shapeOf(view))), i64(offset),
                       i64(count), i64(layer.elements), cpp(layer.master),
                       cpp(layer.m), cpp(layer.v), Arg(get(view))});
      }
    }
    return;
  }
  for (auto &[name, p] : params) {
    if (!p.master || !p.m || !p.v)
      continue;
    registerParam("ratrain::rt::emit::addParam",
                  {Arg(session), str(name),
                   // A streamed master's first piece is flat; the 16-bit
                   // view has the tensor's shape.
                   opaque(shapeText(shapeOf(p.view ? p.view : p.master))),
                   cpp(p.master), cpp(p.m), cpp(p.v),
                   Arg(get(p.view ? p.view : p.master))});
  }
}

LogicalResult Converter::convertProgram(ProgramOp program) {
  Location loc = program.getLoc();
  auto rtType = emitc::OpaqueType::get(ctx, "ratrain::rt::Runtime &");
  auto sessionType = emitc::OpaqueType::get(ctx, "ratrain::rt::Session &");
  // The stage's C++ function is named after the program.
  StringRef symName = program.getSymName();
  if (symName.empty() || !llvm::all_of(symName, [](char c) {
        return llvm::isAlnum(c) || c == '_';
      }))
    return program.emitOpError("name '")
           << commentText(symName)
           << "' is not usable in a C++ identifier (letters, digits, '_')";
  std::string name = ("ratrain_" + symName).str();
  auto func = emitc::FuncOp::create(
      b, loc, name, FunctionType::get(ctx, {rtType, sessionType}, {}));
  Block *entry = func.addEntryBlock();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);
  runtime = entry->getArgument(0);
  session = entry->getArgument(1);
  mapping.clear();

  emitc::VerbatimOp::create(
      b, loc, ("// " + program.getSymName() + ": prologue (runs once)").str());
  bool inPrologue = true;
  auto startLoop = [&] {
    emitParams(program);
    emitc::VerbatimOp::create(
        b, loc,
        b.getStringAttr(
            "for (ratrain::rt::emit::start({}); {}.beginStep();) {{"),
        ValueRange{session, session});
  };
  for (Operation &op : program.getBodyBlock()) {
    // The prologue's offloads put initialized offloaded states into the tier
    // (docs/lowering.md, "Offloaded optimizer states and masters").
    bool prologueOffload =
        isa<OffloadOp, WaitOp>(op) && op.hasAttr("mt3k.prologue");
    if (inPrologue && !isa<BufferOp, ViewOp, InitParamOp>(op) &&
        !prologueOffload) {
      inPrologue = false;
      startLoop();
    }
    if (failed(convertOp(&op)) || failedGroup)
      return failure();
  }
  if (inPrologue)
    startLoop();
  emitc::VerbatimOp::create(b, loc, b.getStringAttr("{}.endStep();"),
                            ValueRange{session});
  emitc::VerbatimOp::create(b, loc, "}");
  emitc::ReturnOp::create(b, loc, Value());
  dropUnusedResults(func);
  return success();
}

void Converter::dropUnusedResults(emitc::FuncOp func) {
  // Backwards, so that a view dropped here can leave its source unused.
  SmallVector<emitc::CallOpaqueOp> calls;
  func.walk([&](emitc::CallOpaqueOp call) { calls.push_back(call); });
  for (emitc::CallOpaqueOp call : llvm::reverse(calls)) {
    if (call.getNumResults() != 1 || !call.getResult(0).use_empty())
      continue;
    // A view only slices its source (the mt3k verifier checked the range).
    if (call.getCallee() == "ratrain::rt::emit::view") {
      call.erase();
      continue;
    }
    // Everything else has an effect: an arena check, a transfer to wait
    // for never. Keep the call as a statement.
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(call);
    emitc::CallOpaqueOp::create(b, call.getLoc(), TypeRange(), call.getCallee(),
                                call.getOperands(), call.getArgsAttr());
    call.erase();
  }
  // A stage's function has the signature every stage's has; a parameter
  // its program does not use is voided.
  b.setInsertionPointToStart(&func.getBody().front());
  for (BlockArgument arg : func.getArguments())
    if (arg.use_empty())
      emitc::VerbatimOp::create(b, func.getLoc(), b.getStringAttr("(void){};"),
                                ValueRange{arg});
}

LogicalResult Converter::run() {
  Location loc = source.getLoc();
  emitc::VerbatimOp::create(
      b, loc,
      "// Generated by ratrain-translate --mt3k-to-cpp from mt3k programs. "
      "Do not edit.");
  emitc::IncludeOp::create(
      b, loc, b.getStringAttr("ratrain/runtime/EmittedProgram.h"), UnitAttr());
  for (ProgramOp program : source.getOps<ProgramOp>())
    if (failed(convertProgram(program)))
      return failure();
  return emitProgramDescription(b, source);
}

} // namespace

FailureOr<OwningOpRef<ModuleOp>> ratrain::convertMT3KToEmitC(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  ctx->getOrLoadDialect<emitc::EmitCDialect>();
  OwningOpRef<ModuleOp> target = ModuleOp::create(module.getLoc());
  Converter converter(module, *target);
  if (failed(converter.run()))
    return failure();
  return target;
}

LogicalResult ratrain::translateMT3KToCpp(ModuleOp module,
                                          llvm::raw_ostream &os) {
  FailureOr<OwningOpRef<ModuleOp>> target = convertMT3KToEmitC(module);
  if (failed(target))
    return failure();
  return emitc::translateToCpp(target->get(), os);
}

void ratrain::registerMT3KToCppTranslation() {
  auto dialects = [](DialectRegistry &registry) {
    registry.insert<mt3k::MT3KDialect, ratrain::RATrainDialect,
                    emitc::EmitCDialect>();
  };
  TranslateFromMLIRRegistration toCpp(
      "mt3k-to-cpp",
      "emit a module of mt3k programs as a C++ training program (via emitc)",
      [](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitOpError("expected a module of mt3k programs");
        return translateMT3KToCpp(module, os);
      },
      dialects);
  TranslateFromMLIRRegistration toEmitC(
      "mt3k-to-emitc",
      "convert a module of mt3k programs to the emitc module --mt3k-to-cpp "
      "prints",
      [](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitOpError("expected a module of mt3k programs");
        FailureOr<OwningOpRef<ModuleOp>> target = convertMT3KToEmitC(module);
        if (failed(target))
          return failure();
        (*target)->print(os);
        os << "\n";
        return success();
      },
      dialects);
}
