//===- HFConfig.h - HuggingFace config.json import --------------*- C++ -*-===//
//
// Reads a HuggingFace `config.json` (LlamaForCausalLM, Qwen2ForCausalLM,
// BaichuanForCausalLM) into a ModelConfig, with LLVM's JSON parser. Every
// error names the file and the field.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MODEL_HFCONFIG_H
#define RATRAIN_MODEL_HFCONFIG_H

#include "ratrain/Model/ModelConfig.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace ratrain {

/// Options that are not in config.json but that training needs.
struct HFImportOptions {
  /// Training sequence length; 0 takes min(max_position_embeddings, 4096).
  int64_t seqLen = 0;
  /// Overrides torch_dtype when set.
  std::optional<DType> dtype;
};

/// Parses the text of a config.json. `fileName` is used in messages only.
llvm::Expected<ModelConfig> parseHFConfig(llvm::StringRef json,
                                          llvm::StringRef fileName,
                                          const HFImportOptions &options = {});

/// Reads and parses a config.json file.
llvm::Expected<ModelConfig> loadHFConfig(llvm::StringRef path,
                                         const HFImportOptions &options = {});

} // namespace ratrain

#endif // RATRAIN_MODEL_HFCONFIG_H
