//===- GemmCalls.cpp - The GEMM calls of a training step ------------------===//

#include "ratrain/Planner/GemmCalls.h"

#include <algorithm>
#include <tuple>

using namespace ratrain;

/// A linear layer Y[t x out] = X[t x in] W[out x in]^T's call in `pass`.
static GemmCall linearCall(int64_t tokens, int64_t in, int64_t out,
                           GemmPass pass, int64_t count) {
  switch (pass) {
  case GemmPass::Forward:
    return {GemmForm::NT, tokens, out, in, count};
  case GemmPass::BackwardInput:
    return {GemmForm::NN, tokens, in, out, count};
  case GemmPass::BackwardWeight:
    return {GemmForm::TN, out, in, tokens, count};
  }
  llvm_unreachable("unknown GEMM pass");
}

llvm::SmallVector<GemmCall, 8> ratrain::layerGemmCalls(const ModelConfig &model,
                                                       int64_t microBatchSize,
                                                       GemmPass pass) {
  int64_t t = model.seqLen * microBatchSize;
  int64_t h = model.hidden, q = model.qDim(), kv = model.kvDim(),
          ffn = model.ffnHidden;
  return {linearCall(t, h, q, pass, 1),   // q
          linearCall(t, q, h, pass, 1),   // o
          linearCall(t, h, kv, pass, 2),  // k, v
          linearCall(t, h, ffn, pass, 2), // gate, up
          linearCall(t, ffn, h, pass, 1)};
}

GemmCall ratrain::headGemmCall(const ModelConfig &model, int64_t microBatchSize,
                               GemmPass pass) {
  return linearCall(model.seqLen * microBatchSize, model.hidden, model.vocab,
                    pass, 1);
}

std::vector<GemmCall>
ratrain::distinctGemmCalls(const ModelConfig &model,
                           llvm::ArrayRef<int64_t> microBatchSizes) {
  std::vector<GemmCall> calls;
  for (int64_t b : microBatchSizes)
    for (GemmPass pass : {GemmPass::Forward, GemmPass::BackwardInput,
                          GemmPass::BackwardWeight}) {
      for (GemmCall call : layerGemmCalls(model, b, pass))
        calls.push_back(call);
      calls.push_back(headGemmCall(model, b, pass));
    }
  auto key = [](const GemmCall &c) {
    return std::make_tuple(int(c.form), c.m, c.n, c.k);
  };
  std::sort(
      calls.begin(), calls.end(),
      [&](const GemmCall &a, const GemmCall &b) { return key(a) < key(b); });
  calls.erase(std::unique(calls.begin(), calls.end(),
                          [&](const GemmCall &a, const GemmCall &b) {
                            return key(a) == key(b);
                          }),
              calls.end());
  for (GemmCall &call : calls)
    call.count = 1;
  return calls;
}

std::vector<GemmCall>
ratrain::unmeasuredGemmCalls(llvm::ArrayRef<GemmCall> calls,
                             const MeasuredGemms &measured) {
  std::vector<GemmCall> unmeasured;
  for (const GemmCall &call : calls)
    if (call.flops() <= kMaxMeasuredGemmFlops &&
        (!measured.find(false, call.form, call.m, call.n, call.k) ||
         !measured.find(true, call.form, call.m, call.n, call.k)))
      unmeasured.push_back(call);
  return unmeasured;
}
