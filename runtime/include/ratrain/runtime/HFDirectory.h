//===- HFDirectory.h - HuggingFace model directories ------------*- C++ -*-===//
//
// A HuggingFace model directory: `config.json` and the weights, either one
// `model.safetensors` or `model.safetensors.index.json` ({"weight_map":
// {tensor: file}}) with its shards; tensors in F32, BF16 or F16 under the HF
// names of ratrain/Model/ParameterLayout.h.
//
//  - loadPretrained fills a program's parameter slots from one (`--init-from
//    DIR`): the FP32 masters (a ZeRO rank its range), the 16-bit views of
//    sharded slots; the Adam moments stay as initialized (zero).
//  - exportCheckpoint writes one from a RATrain checkpoint (`ratrain-ckpt
//    export`): the FP32 masters, consolidated over pipeline stages and ZeRO
//    shards, so export followed by --init-from starts from the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_HFDIRECTORY_H
#define RATRAIN_RUNTIME_HFDIRECTORY_H

#include "ratrain/Model/ModelConfig.h"
#include "ratrain/runtime/Checkpoint.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace ratrain::rt {

/// Checks `directory` against `model` and loads `slots` from it:
/// config.json must describe the same shape (the first differing field is
/// named), every tensor of the directory must be a parameter of the model
/// (besides rotary `inv_freq` buffers and, for a tied model, an
/// `lm_head.weight`), every parameter must be there with the model's shape
/// (the first mismatch is named with its file). Nothing is written.
llvm::Error loadPretrained(llvm::StringRef directory, const ModelConfig &model,
                           llvm::ArrayRef<ParamSlot> slots);

/// What exportCheckpoint wrote.
struct ExportSummary {
  std::string directory;
  uint64_t step = 0;
  uint64_t tensors = 0, bytes = 0, files = 0;
};

/// Writes the FP32 weights of the checkpoint at `checkpoint` (a step
/// directory or a root with `latest`; any pipeline layout, ZeRO or not) into
/// the new directory `out` as a HuggingFace model directory, with
/// `configPath` (the config.json the model was imported from, checked
/// against the checkpoint's model shape) as its config.json. Shards of at
/// most `maxShardBytes` (HF's 5 GB by default) with an index when the
/// weights are larger. `out` must not exist; on any error nothing is left
/// there.
llvm::Expected<ExportSummary>
exportCheckpoint(llvm::StringRef checkpoint, llvm::StringRef configPath,
                 llvm::StringRef out,
                 uint64_t maxShardBytes = 5'000'000'000ull);

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_HFDIRECTORY_H
