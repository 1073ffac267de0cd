//===- ParameterLayout.h - A model's parameter tensors ----------*- C++ -*-===//
//
// The one description of a model's parameter tensors that the lowering (the
// flat per-layer view, master, gradient and Adam buffers), the runtime's
// checkpoints (HuggingFace safetensors names and shapes) and, through the
// names the lowering puts in the IR, the gradient checker share. Layers are
// numbered as the `ratrain.model` op numbers them: 0 is the token embedding,
// 1 .. L the decoder layers, L + 1 the final norm and LM head.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MODEL_PARAMETERLAYOUT_H
#define RATRAIN_MODEL_PARAMETERLAYOUT_H

#include "ratrain/Model/ModelConfig.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ratrain {

/// How a parameter is initialized for training from scratch: weights from a
/// normal distribution, RMSNorm weights to one, biases to zero.
enum class ParamInit { Normal, Ones, Zeros };

/// One parameter tensor of a layer: its HuggingFace name, its shape ([out,
/// in] for projections, as HF stores them), its initialization and where it
/// sits, in elements, inside the layer's flat parameter buffers.
struct ParamTensor {
  std::string name;
  llvm::SmallVector<int64_t, 2> shape;
  ParamInit init = ParamInit::Normal;
  int64_t offset = 0;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

/// Layers of `config` in the `ratrain.model` numbering: L + 2.
inline int64_t numParameterLayers(const ModelConfig &config) {
  return config.numLayers + 2;
}

/// The tensors of layer `layer` (0 .. L + 1) in the order they sit in its
/// flat buffers, offsets contiguous from 0:
///   0      model.embed_tokens.weight [V, h]
///   1..L   model.layers.<l-1>.{input_layernorm, self_attn.q/k/v_proj (or
///          Baichuan's packed self_attn.W_pack [q + 2 kv, h]), q/k/v biases
///          (Qwen2), self_attn.o_proj, post_attention_layernorm,
///          mlp.gate/up/down_proj}
///   L + 1  model.norm.weight [h], lm_head.weight [V, h] (absent when the
///          model ties its embeddings)
/// Their sizes add up to embeddingParams(), paramsPerLayer() and
/// headParams().
llvm::SmallVector<ParamTensor> layerParameterTensors(const ModelConfig &config,
                                                     int64_t layer);

/// The name prefix of layer `layer`'s flat buffers: "model.embed_tokens",
/// "model.layers.<l-1>", "lm_head".
std::string layerParameterPrefix(const ModelConfig &config, int64_t layer);

} // namespace ratrain

#endif // RATRAIN_MODEL_PARAMETERLAYOUT_H
