//===- ImportHFConfig.cpp - config.json to a ratrain module ---------------===//
//
// The first stage of the pipeline: a HuggingFace config.json (LLaMA, Qwen2,
// Baichuan) and optionally a machine file become a `ratrain.model`.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Target/ImportHFConfig.h"

#include "RATrain/RATrainOps.h"
#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Model/HFConfig.h"

#include "mlir/IR/Builders.h"
#include "mlir/Tools/mlir-translate/Translation.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ManagedStatic.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace ratrain;

/// A symbol name from a model name: "llama-2-7b" -> "llama_2_7b".
static std::string getModelSymbol(StringRef name) {
  std::string symbol;
  for (char c : name)
    symbol.push_back(llvm::isAlnum(c) ? c : '_');
  if (symbol.empty() || llvm::isDigit(symbol.front()))
    symbol.insert(symbol.begin(), 'm');
  return symbol;
}

static FloatType getDTypeType(MLIRContext *context, DType type) {
  switch (type) {
  case DType::F32:
    return Float32Type::get(context);
  case DType::F16:
    return Float16Type::get(context);
  case DType::BF16:
    return BFloat16Type::get(context);
  }
  llvm_unreachable("unknown dtype");
}

RopeScalingAttr ratrain::getRopeScalingAttr(MLIRContext *context,
                                            const RopeScaling &scaling) {
  bool linear = scaling.kind == RopeScalingKind::Linear;
  return RopeScalingAttr::get(
      context, linear ? RopeScalingMethod::Linear : RopeScalingMethod::Llama3,
      APFloat(scaling.factor), APFloat(linear ? 0.0 : scaling.lowFreqFactor),
      APFloat(linear ? 0.0 : scaling.highFreqFactor),
      linear ? 0 : scaling.originalMaxPositions);
}

OwningOpRef<ModuleOp> ratrain::buildModelModule(const ModelConfig &config,
                                                MLIRContext *context,
                                                StringRef machineFile) {
  context->loadDialect<RATrainDialect>();
  Location loc = FileLineColLoc::get(context, config.name, 1, 1);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  OpBuilder builder = OpBuilder::atBlockBegin(module->getBody());
  if (!machineFile.empty())
    (*module)->setAttr("ratrain.machine", builder.getStringAttr(machineFile));

  auto model = ModelOp::create(
      builder, loc, getModelSymbol(config.name),
      stringifyModelFamily(config.family), getDTypeType(context, config.dtype),
      config.seqLen, config.maxPositions,
      config.positions == PositionEncoding::Alibi ? PositionEncodingKind::Alibi
                                                  : PositionEncodingKind::Rope,
      APFloat(config.rmsNormEps), APFloat(config.ropeTheta),
      config.tieEmbeddings,
      /*plan=*/PlanAttr(), config.normHead,
      config.ropeScaling ? getRopeScalingAttr(context, *config.ropeScaling)
                         : RopeScalingAttr(),
      config.slidingWindow > 0 ? builder.getI64IntegerAttr(config.slidingWindow)
                               : IntegerAttr());
  Block *body = new Block();
  model.getBody().push_back(body);
  builder.setInsertionPointToStart(body);

  IntegerAttr none;
  LayerOp::create(builder, loc, 0, LayerKind::Embedding, config.hidden, none,
                  none, none, builder.getI64IntegerAttr(config.vocab),
                  /*qkv_bias=*/false);
  for (int64_t layer = 1; layer <= config.numLayers; ++layer)
    LayerOp::create(
        builder, loc, layer, LayerKind::Decoder, config.hidden,
        builder.getI64IntegerAttr(config.numHeads),
        builder.getI64IntegerAttr(config.numKVHeads),
        builder.getI64IntegerAttr(config.ffnHidden), none, config.qkvBias,
        config.headDimension ? builder.getI64IntegerAttr(config.headDimension)
                             : none);
  LayerOp::create(builder, loc, config.numLayers + 1, LayerKind::Head,
                  config.hidden, none, none, none,
                  builder.getI64IntegerAttr(config.vocab), /*qkv_bias=*/false);
  return module;
}

namespace {
/// Options of --import-hf-config.
struct ImportOptions {
  llvm::cl::opt<std::string> machine{
      "machine", llvm::cl::desc("machine file (YAML) recorded on the module"),
      llvm::cl::init("")};
  llvm::cl::opt<int64_t> seqLen{
      "seq-len",
      llvm::cl::desc("training sequence length (default: "
                     "min(max_position_embeddings, 4096))"),
      llvm::cl::init(0)};
  llvm::cl::opt<std::string> dtype{
      "dtype", llvm::cl::desc("override torch_dtype: f32, f16 or bf16"),
      llvm::cl::init("")};
};
} // namespace

static llvm::ManagedStatic<ImportOptions> importOptions;

void ratrain::registerImportHFConfigTranslation() {
  *importOptions; // register the options before the command line is parsed
  TranslateToMLIRRegistration registration(
      "import-hf-config",
      "import a HuggingFace config.json (LLaMA, Qwen2, Baichuan) as a "
      "ratrain.model",
      [](llvm::SourceMgr &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buffer =
            sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
        StringRef fileName = buffer->getBufferIdentifier();
        Location loc = FileLineColLoc::get(context, fileName, 1, 1);

        HFImportOptions options;
        options.seqLen = importOptions->seqLen;
        if (!importOptions->dtype.empty()) {
          options.dtype = parseDType(importOptions->dtype);
          if (!options.dtype) {
            emitError(loc) << "--dtype: unknown type '" << importOptions->dtype
                           << "' (f32, f16 or bf16)";
            return nullptr;
          }
        }
        llvm::Expected<ModelConfig> config =
            parseHFConfig(buffer->getBuffer(), fileName, options);
        if (!config) {
          emitError(loc) << llvm::toString(config.takeError());
          return nullptr;
        }
        if (!importOptions->machine.empty()) {
          llvm::Expected<MachineModel> machine =
              loadMachineModel(importOptions->machine);
          if (!machine) {
            emitError(loc) << llvm::toString(machine.takeError());
            return nullptr;
          }
        }
        return buildModelModule(*config, context, importOptions->machine);
      },
      [](DialectRegistry &registry) { registry.insert<RATrainDialect>(); });
}
