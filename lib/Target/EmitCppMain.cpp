//===- EmitCppMain.cpp - The program description and main() ---------------===//
//
// The module-level part of --mt3k-to-cpp: the description of the program
// (machine, model, plan, stages) as `emitc.global`s and a main() that hands
// it to the runtime's entry point; and the C++ spelling of names. See
// docs/emitter.md.
//
//===----------------------------------------------------------------------===//

#include "EmitCppInternal.h"

#include "MT3K/MT3KOps.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <string>

using namespace mlir;
using namespace ratrain;
using namespace ratrain::mt3k;

std::string ratrain::emitc_cpp::cppString(StringRef s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      out += '\\';
      out += char('0' + (c >> 6));
      out += char('0' + ((c >> 3) & 7));
      out += char('0' + (c & 7));
    }
  }
  return out + "\"";
}

std::string ratrain::emitc_cpp::commentText(StringRef s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out += char(c);
    else
      out += llvm::formatv("\\x{0:x-2}", unsigned(c)).str();
  }
  return out;
}

LogicalResult ratrain::emitc_cpp::emitProgramDescription(OpBuilder &b,
                                                         ModuleOp source) {
  MLIRContext *ctx = b.getContext();
  auto opaque = [&](StringRef text) {
    return emitc::OpaqueAttr::get(ctx, text);
  };
  Location loc = source.getLoc();
  MachineOp machine;
  int64_t pp = 0, dp = 1;
  bool partitionedShards = false;
  for (Operation &op : *source.getBody()) {
    if (auto m = dyn_cast<MachineOp>(op))
      machine = m;
    if (auto g = dyn_cast<GroupOp>(op)) {
      if (g.getKind() == GroupKind::data_inside ||
          g.getKind() == GroupKind::data_across)
        partitionedShards = true;
      if (g.getKind() == GroupKind::pipeline)
        pp = g.getSize();
      if (g.getKind() == GroupKind::data_parallel)
        dp = g.getSize();
    }
  }
  if (!machine)
    return source.emitError("has no mt3k.machine to size the runtime from");
  SmallVector<ProgramOp> programs(source.getOps<ProgramOp>());
  if (programs.empty())
    return source.emitError("has no mt3k.program to emit");
  if (pp == 0)
    pp = programs.size();
  int64_t ddrBytes = 0;
  for (ProgramOp p : programs)
    ddrBytes = std::max<int64_t>(ddrBytes, p.getDdrArena()
                                               ? int64_t(*p.getDdrArena())
                                               : int64_t(machine.getDdr()));

  // `static const <type> <name> = <init>;` at module level.
  auto global = [&](StringRef name, Type type, const std::string &init) {
    emitc::GlobalOp::create(b, loc, name, type, opaque(init),
                            /*extern_specifier=*/false,
                            /*static_specifier=*/true,
                            /*const_specifier=*/true);
  };
  auto field = [](StringRef name, const Twine &value) {
    return ("\n    /*" + name + "=*/" + value + ",").str();
  };

  // The model for the Session (data loader, loss log, checkpoints).
  MLIRContext *context = source->getContext();
  ModelAttr model = MT3KDialect::ModelAttrHelper(context).isAttrPresent(source)
                        ? MT3KDialect::ModelAttrHelper(context).getAttr(source)
                        : ModelAttr();
  int64_t numLayers = 0, seqLen = 0;
  if (model) {
    numLayers = model.getDecoderLayers();
    seqLen = model.getSeqLen();
    StringRef family = "Llama";
    if (model.getFamily().getValue() == "qwen2")
      family = "Qwen2";
    else if (model.getFamily().getValue() == "baichuan")
      family = "Baichuan";
    else if (model.getFamily().getValue() == "mistral")
      family = "Mistral";
    StringRef dtype = "BF16";
    if (model.getDtype().isF32())
      dtype = "F32";
    else if (model.getDtype().isF16())
      dtype = "F16";
    auto number = [](int64_t v) { return std::to_string(v); };
    std::string init = "{";
    init += field("name", cppString(model.getName().getValue()));
    init += field("family", "ratrain::ModelFamily::" + family);
    init += field("numLayers", number(numLayers));
    init += field("hidden", number(model.getHidden()));
    init += field("numHeads", number(model.getHeads()));
    init += field("numKVHeads", number(model.getKvHeads()));
    init += field("ffnHidden", number(model.getFfn()));
    init += field("vocab", number(model.getVocab()));
    init += field("seqLen", number(model.getSeqLen()));
    init += field("maxPositions", number(model.getMaxPositions()));
    init += field("dtype", "ratrain::DType::" + dtype);
    init += field("qkvBias", model.getQkvBias().getValue() ? "true" : "false");
    init += field(
        "rmsNormEps",
        llvm::formatv("{0:e9}", model.getRmsEps().getValueAsDouble()).str());
    init += field(
        "ropeTheta",
        llvm::formatv("{0:e9}", model.getRopeTheta().getValueAsDouble()).str());
    init += field("tieEmbeddings", model.getTieEmbeddings() &&
                                           model.getTieEmbeddings().getValue()
                                       ? "true"
                                       : "false");
    init += field("headDimension",
                  number(model.getHeadDim() ? model.getHeadDim().getInt() : 0));
    init += "\n}";
    emitc::VerbatimOp::create(b, loc, "// The module's mt3k.model.");
    global("ratrain_model",
           emitc::OpaqueType::get(ctx, "ratrain::rt::emit::ProgramModel"),
           init);
  }

  // Stage partition in decoder layers: stage_layers counts model layers
  // (embedding + decoders + head).
  int64_t microBatch = 1, microBatches = 1;
  SmallVector<int64_t> partition, stageRanks, replicaShares;
  SmallVector<double> rankSlowdown;
  bool replicaMajor = false;
  if (MT3KDialect::JobAttrHelper(context).isAttrPresent(source)) {
    JobAttr job = MT3KDialect::JobAttrHelper(context).getAttr(source);
    microBatch = job.getMicroBatchSize();
    microBatches = job.getMicroBatches();
    int64_t cumulative = 0;
    partition.push_back(0);
    ArrayRef<int64_t> stages = job.getStageLayers().asArrayRef();
    for (size_t s = 0; s + 1 < stages.size(); ++s) {
      cumulative += stages[s];
      partition.push_back(std::clamp<int64_t>(cumulative - 1, 0, numLayers));
    }
    partition.push_back(numLayers);
    // A documented `int64_t name[] = {...}` global.
    auto int64Array = [&](StringRef name, ArrayRef<int64_t> values,
                          StringRef comment) {
      std::string init;
      llvm::raw_string_ostream os(init);
      os << "{";
      llvm::interleaveComma(values, os);
      os << "}";
      emitc::VerbatimOp::create(b, loc, comment);
      global(
          name,
          emitc::ArrayType::get({int64_t(values.size())}, b.getIntegerType(64)),
          init);
    };
    int64Array("ratrain_partition", partition,
               "// The first decoder layer of each stage (mt3k.job).");
    if (DenseI64ArrayAttr ranks = job.getStageRanks()) {
      stageRanks.assign(ranks.asArrayRef().begin(), ranks.asArrayRef().end());
      int64Array("ratrain_stage_ranks", stageRanks,
                 "// The rank that runs each virtual stage (mt3k.job).");
    }
    if (DenseI64ArrayAttr shares = job.getReplicaMicroBatches()) {
      replicaShares.assign(shares.asArrayRef().begin(),
                           shares.asArrayRef().end());
      int64Array("ratrain_replica_micro_batches", replicaShares,
                 "// The micro-batches of each data-parallel replica "
                 "(mt3k.job).");
    }
    replicaMajor = job.getReplicaMajor() && job.getReplicaMajor().getValue();
    if (DenseF64ArrayAttr slowdown = job.getRankSlowdown()) {
      rankSlowdown.assign(slowdown.asArrayRef().begin(),
                          slowdown.asArrayRef().end());
      std::string values;
      llvm::raw_string_ostream os(values);
      os << "{";
      llvm::interleaveComma(rankSlowdown, os, [&](double v) {
        os << llvm::formatv("{0:e17}", v).str();
      });
      os << "}";
      emitc::VerbatimOp::create(
          b, loc,
          "// Per rank, how much slower its class of clusters is than the "
          "fastest (mt3k.job; --emulate-classes).");
      global(
          "ratrain_rank_slowdown",
          emitc::ArrayType::get({int64_t(rankSlowdown.size())}, b.getF64Type()),
          values);
    }
  }

  // The program of each stage.
  std::string stages;
  {
    llvm::raw_string_ostream os(stages);
    os << "{";
    llvm::interleaveComma(programs, os, [&](ProgramOp p) {
      os << "{" << p.getStage() << ", ratrain_" << p.getSymName() << "}";
    });
    os << "}";
  }
  global("ratrain_stages",
         emitc::ArrayType::get(
             {int64_t(programs.size())},
             emitc::OpaqueType::get(ctx, "ratrain::rt::emit::StageProgram")),
         stages);

  auto number = [](int64_t v) { return std::to_string(v); };
  std::string init = "{";
  init += field("machine", cppString(machine.getName()));
  init += field("pp", number(pp));
  init += field("dp", number(dp));
  init += field("ddrBytes", number(ddrBytes) + "ull");
  init += field("gsmBytes", number(machine.getGsm()) + "ull");
  init += field("amBytes", number(machine.getAm()) + "ull");
  init += field("cores", number(machine.getCores()));
  init += field("dmaChannels", number(machine.getDmaChannels()));
  init += field("arenaAlignment", number(machine.getAlignment()));
  init += field("model", model ? "&ratrain_model" : "nullptr");
  init +=
      field("partition", partition.empty() ? "nullptr" : "ratrain_partition");
  init += field("partitionSize", number(partition.size()));
  init += field("seqLen", number(seqLen));
  init += field("microBatch", number(microBatch));
  init += field("microBatches", number(microBatches));
  init += field("stages", "ratrain_stages");
  init += field("numStages", number(programs.size()));
  if (!stageRanks.empty()) {
    init += field("stageRanks", "ratrain_stage_ranks");
    init += field("stageRanksSize", number(stageRanks.size()));
  }
  // Whether the programs' pipeline messages are one-sided puts.
  bool oneSided = false;
  source.walk(
      [&](SendOp send) { oneSided |= send.getPutOffset().has_value(); });
  // Heterogeneous jobs: uneven dp shares, the rank order, the per-rank
  // slowdown of --emulate-classes (after the fields above: positional).
  bool heterogeneous =
      !replicaShares.empty() || replicaMajor || !rankSlowdown.empty();
  // The storage tier's host cache (after the fields above: positional, so
  // they are written too).
  std::optional<int64_t> hostCache;
  if (IntegerAttr cache = machine.getOffloadHostCacheAttr())
    hostCache = cache.getInt();
  bool trailing = heterogeneous || hostCache.has_value();
  if (partitionedShards || oneSided || trailing) {
    // Positional: the stage ranks come first.
    if (stageRanks.empty()) {
      init += field("stageRanks", "nullptr");
      init += field("stageRanksSize", "0");
    }
    init += field("partitionedShards", partitionedShards ? "true" : "false");
  }
  if (oneSided || trailing)
    init += field("oneSidedTransfers", oneSided ? "true" : "false");
  if (trailing) {
    init += field("replicaMicroBatches", replicaShares.empty()
                                             ? "nullptr"
                                             : "ratrain_replica_micro_batches");
    init += field("replicaMicroBatchesSize", number(replicaShares.size()));
    init += field("replicaMajor", replicaMajor ? "true" : "false");
    init += field("rankSlowdown",
                  rankSlowdown.empty() ? "nullptr" : "ratrain_rank_slowdown");
    init += field("rankSlowdownSize", number(rankSlowdown.size()));
  }
  if (hostCache)
    init += field("offloadHostCacheBytes", number(*hostCache) + "ull");
  init += "\n}";
  emitc::VerbatimOp::create(
      b, loc,
      "// The runtime sized from the mt3k.machine, the groups and the largest "
      "ddr_arena of the programs; the session from the model and plan.");
  global("ratrain_program",
         emitc::OpaqueType::get(ctx, "ratrain::rt::emit::ProgramDescription"),
         init);

  // int main(int argc, char **argv): the runtime's entry point.
  Type intType = emitc::OpaqueType::get(ctx, "int");
  Type argvType = emitc::OpaqueType::get(ctx, "char **");
  auto mainFunc = emitc::FuncOp::create(
      b, loc, "main", FunctionType::get(ctx, {intType, argvType}, {intType}));
  Block *entry = mainFunc.addEntryBlock();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);
  auto run = emitc::CallOpaqueOp::create(
      b, loc, TypeRange(intType), "ratrain::rt::emit::runProgram",
      entry->getArguments(),
      b.getArrayAttr(
          {b.getIndexAttr(0), b.getIndexAttr(1), opaque("ratrain_program")}));
  Value status = run.getResult(0);
  emitc::ReturnOp::create(b, loc, status);
  return success();
}
