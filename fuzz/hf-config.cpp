//===- hf-config.cpp - fuzz the Hugging Face config.json importer ---------===//
//
// Input: the text of a config.json. parseHFConfig must return a model or an
// error, never crash, hang or trip a sanitizer; an accepted model's derived
// sizes are computed too.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"
#include "ratrain/Model/HFConfig.h"
#include "ratrain/Model/ParameterLayout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<ratrain::ModelConfig> model =
      ratrain::parseHFConfig(ratrain::fuzz::asText(data, size), "fuzz.json");
  if (!model) {
    llvm::consumeError(model.takeError());
    return 0;
  }
  (void)model->totalParams();
  for (int64_t layer :
       {int64_t(0), int64_t(1), ratrain::numParameterLayers(*model) - 1})
    for (const ratrain::ParamTensor &tensor :
         ratrain::layerParameterTensors(*model, layer))
      (void)tensor.numel();
  return 0;
}
