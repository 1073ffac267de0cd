//===- EmitCppStage.cpp - The C++ function of one mt3k program
//-------------===//
//
// A `mt3k.program` becomes `void ratrain_<program>(Runtime &, Session &)`:
// its prologue, the registration of its parameters for checkpoints, and the
// session's step loop around the rest. The ops move into the function as
// they are; the patterns of MT3KToEmitC.cpp convert them there. See
// docs/emitter.md.
//
//===----------------------------------------------------------------------===//

#include "EmitCppInternal.h"

#include "MT3K/MT3KOps.h"
#include "MT3K/MT3KTypes.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace mlir;
using namespace ratrain;
using namespace ratrain::mt3k;
using namespace ratrain::emitc_cpp;

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<BufferType>(v.getType()).getShape();
}

/// Session::addParam (or, ZeRO, addShardParam) for every parameter tensor
/// the ops of `prologue` (the stage function's block while it holds only the
/// prologue) initialize, at `b`'s insertion point.
static void emitParams(OpBuilder &b, Block &prologue, Location loc,
                       Value runtime, Value session) {
  MLIRContext *ctx = b.getContext();
  Type tensorType = emitc::OpaqueType::get(ctx, kTensorType);
  auto opaque = [&](StringRef text) -> Attribute {
    return emitc::OpaqueAttr::get(ctx, text);
  };
  auto str = [&](StringRef s) { return opaque(cppString(s)); };
  auto i64 = [&](int64_t v) -> Attribute { return b.getI64IntegerAttr(v); };
  // The ops are still mt3k ops: the conversion maps their values.
  auto get = [](Value v) { return v; };
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
  for (auto offload : prologue.getOps<OffloadOp>())
    if (offload->hasAttr("mt3k.prologue")) {
      prologueOffloads[offload.getKey()] = offload;
      auto [parent, offset] = offload.getKey().rsplit('@');
      uint64_t value;
      if (!offset.empty() && !offset.getAsInteger(10, value))
        prologueOffloads.try_emplace(parent, offload);
    }
  auto laterPiece = [](InitParamOp init) {
    auto piece = init.getOffloadPieceAttr();
    return piece && piece.getInt() > 0;
  };
  for (auto init : prologue.getOps<InitParamOp>()) {
    auto key = init.getOffloadKeyAttr();
    auto offset = init.getOffloadOffsetAttr();
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
    if (auto bytes = init.getOffloadBytesAttr())
      args.push_back(i64(bytes.getInt()));
    tierCopies[init.getDest()] =
        emitCall(b, loc, "ratrain::rt::emit::offloaded", tensorType, args);
  }
  auto cpp = [&](Value v) {
    Value copy = tierCopies.lookup(v);
    return Arg(copy ? copy : get(v));
  };
  bool zero =
      llvm::any_of(prologue.getOps<InitParamOp>(), [](InitParamOp init) {
        return bool(init.getDpShardAttr());
      });
  for (auto init : prologue.getOps<InitParamOp>()) {
    if (laterPiece(init))
      continue;
    StringRef name = init.getParam();
    Value dest = init.getDest();
    if (auto shard = init.getDpShardAttr()) {
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
        layer->tensors = init.getDpShardTensorsAttr();
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
          b, loc,
          "// parameters and Adam moments for checkpoints (Session::addParam)");
    commented = true;
    emitCall(b, loc, callee, Type(), args);
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

FailureOr<emitc::FuncOp>
ratrain::emitc_cpp::createStageFunction(OpBuilder &b, ProgramOp program) {
  MLIRContext *ctx = b.getContext();
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
  Value runtime = entry->getArgument(0);
  Value session = entry->getArgument(1);

  emitc::VerbatimOp::create(
      b, loc, ("// " + program.getSymName() + ": prologue (runs once)").str());
  bool inPrologue = true;
  auto startLoop = [&] {
    emitParams(b, *entry, loc, runtime, session);
    emitc::VerbatimOp::create(
        b, loc,
        b.getStringAttr(
            "for (ratrain::rt::emit::start({}); {}.beginStep();) {{"),
        ValueRange{session, session});
  };
  // The ops move as they are; the patterns convert them in place.
  for (Operation &op :
       llvm::make_early_inc_range(program.getBodyBlock().getOperations())) {
    // The prologue's offloads put initialized offloaded states into the tier
    // (docs/lowering.md, "Offloaded optimizer states and masters").
    bool prologueOffload =
        isa<OffloadOp, WaitOp>(op) && op.hasAttr("mt3k.prologue");
    if (inPrologue && !isa<BufferOp, ViewOp, GroupSlotOp, InitParamOp>(op) &&
        !prologueOffload) {
      inPrologue = false;
      startLoop();
    }
    op.moveBefore(entry, entry->end());
  }
  if (inPrologue)
    startLoop();
  emitc::VerbatimOp::create(b, loc, b.getStringAttr("{}.endStep();"),
                            ValueRange{session});
  emitc::VerbatimOp::create(b, loc, "}");
  emitc::ReturnOp::create(b, loc, Value());
  program.erase();
  return func;
}

void ratrain::emitc_cpp::dropUnusedResults(emitc::FuncOp func) {
  OpBuilder b(func.getContext());
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
