//===- ParameterLayout.cpp - A model's parameter tensors ------------------===//

#include "ratrain/Model/ParameterLayout.h"

#include <cassert>

using namespace ratrain;

llvm::SmallVector<ParamTensor>
ratrain::layerParameterTensors(const ModelConfig &config, int64_t layer) {
  assert(layer >= 0 && layer < numParameterLayers(config) && "no such layer");
  llvm::SmallVector<ParamTensor> tensors;
  int64_t offset = 0;
  auto add = [&](std::string name, llvm::SmallVector<int64_t, 2> shape,
                 ParamInit init) {
    ParamTensor tensor{std::move(name), std::move(shape), init, offset};
    offset += tensor.numel();
    tensors.push_back(std::move(tensor));
  };
  int64_t h = config.hidden, v = config.vocab, f = config.ffnHidden;
  int64_t q = config.numHeads * config.headDim(), kv = config.kvDim();
  if (layer == 0) {
    add("model.embed_tokens.weight", {v, h}, ParamInit::Normal);
    return tensors;
  }
  if (layer == config.numLayers + 1) {
    add("model.norm.weight", {h}, ParamInit::Ones);
    if (!config.tieEmbeddings)
      add("lm_head.weight", {v, h}, ParamInit::Normal);
    return tensors;
  }
  std::string p = layerParameterPrefix(config, layer) + ".";
  add(p + "input_layernorm.weight", {h}, ParamInit::Ones);
  if (config.family == ModelFamily::Baichuan) {
    // The rows of q_proj, k_proj and v_proj one after the other, as HF
    // Baichuan checkpoints store them.
    add(p + "self_attn.W_pack.weight", {q + 2 * kv, h}, ParamInit::Normal);
  } else {
    add(p + "self_attn.q_proj.weight", {q, h}, ParamInit::Normal);
    add(p + "self_attn.k_proj.weight", {kv, h}, ParamInit::Normal);
    add(p + "self_attn.v_proj.weight", {kv, h}, ParamInit::Normal);
  }
  if (config.qkvBias) {
    add(p + "self_attn.q_proj.bias", {q}, ParamInit::Zeros);
    add(p + "self_attn.k_proj.bias", {kv}, ParamInit::Zeros);
    add(p + "self_attn.v_proj.bias", {kv}, ParamInit::Zeros);
  }
  add(p + "self_attn.o_proj.weight", {h, q}, ParamInit::Normal);
  add(p + "post_attention_layernorm.weight", {h}, ParamInit::Ones);
  add(p + "mlp.gate_proj.weight", {f, h}, ParamInit::Normal);
  add(p + "mlp.up_proj.weight", {f, h}, ParamInit::Normal);
  add(p + "mlp.down_proj.weight", {h, f}, ParamInit::Normal);
  return tensors;
}

std::string ratrain::layerParameterPrefix(const ModelConfig &config,
                                          int64_t layer) {
  if (layer == 0)
    return "model.embed_tokens";
  if (layer == config.numLayers + 1)
    return "lm_head";
  return "model.layers." + std::to_string(layer - 1);
}
