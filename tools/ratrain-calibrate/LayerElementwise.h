//===- LayerElementwise.h - A layer's element-wise kernels' rate -*- C++
//-*-===//
//
// ratrain-calibrate: the rate of a decoder layer's element-wise kernels
// (RMSNorm, RoPE, SwiGLU, the residual-gradient adds) as a step calls them,
// for cluster.elementwise_bandwidth and _f16 (docs/machine-model.md).
// Built with the runtime's kernels only (RATRAIN_HAVE_KERNELS).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_CALIBRATE_LAYERELEMENTWISE_H
#define RATRAIN_CALIBRATE_LAYERELEMENTWISE_H

#include "ratrain/Model/ModelConfig.h"

#include <cstdint>

namespace ratrain::calibrate {

/// Bytes/s per cluster of one decoder layer of `model` running its
/// element-wise kernels for a micro-batch of `microBatchSize` sequences,
/// forward then backward in the order a step calls them, on `clusters`
/// threads at once (a cluster each, each on its own arrays, as every cluster
/// of a node runs its layers at the same moment): the bytes
/// CostModel::layerElementwiseBytes counts for both passes over the wall
/// time of a pass, the mean over the threads, the best of `reps` runs after
/// a warm-up. Each cluster's passes cycle through copies of its arrays that
/// fill `workingSetBytes` (the model's step working set, as its GEMM calls
/// are timed: in a step the backward reads activations the forward saved
/// long before; at most 2 GiB over all clusters). `sixteenBit`: bf16
/// activations (the kernels' 16-bit variants), else fp32. 0 when a kernel
/// fails.
double measureLayerElementwise(const ModelConfig &model, int64_t microBatchSize,
                               bool sixteenBit, unsigned clusters, int reps,
                               int64_t workingSetBytes);

/// The layer timed without --model: examples/models/tiny-llama.json's
/// (h 256, 8 query and 4 key/value heads, ffn 688, 256 tokens).
ModelConfig tinyLlamaLayer();

} // namespace ratrain::calibrate

#endif // RATRAIN_CALIBRATE_LAYERELEMENTWISE_H
