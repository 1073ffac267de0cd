//===- TrainE2E.cpp - A small real training run on the runtime ------------===//
//
// Exercises the runtime the way an emitted program does, with a model small
// enough to write by hand: the tiny-llama parameter set, of which the
// embedding and the LM head are trained as a bigram language model
// (embedding -> identity decoder layers -> LM head, cross-entropy), split
// over pp pipeline stages and dp data-parallel replicas:
//   stage 0 embeds a micro-batch and sends the activations down the pipeline;
//   middle stages pass activations forward and gradients back;
//   the last stage computes logits, loss and gradients and sends the
//   activation gradient back; gradients are all-reduced over the data group
//   and Adam updates the fp32 master weights.
// Every buffer sits at a planned offset in one DDR arena. Checkpoints hold
// all tiny-llama tensors under their HuggingFace names.
//
// The program has the shape the compiler emits: a prologue (buffers at
// planned offsets, init_param, addParam) and a per-step body driven by
// rt::Session (load_batch, report_loss, logging, checkpoints, resume).
//
// With --zero the fp32 master weights and Adam moments are sharded over the
// data group (ZeRO-1): gradients are reduce-scattered, each rank updates its
// shard and the full fp32 parameter view is all-gathered back.
//
//   ratrain-train-e2e --model M [--pp P] [--dp D] [--zero] [--kill-at-step S]
//     [--fail-save-at S] [--loss-out FILE]  + Session flags: --data D
//     --steps N [--ckpt DIR] [--save-every K] [--resume] [--log FILE]
//
//===----------------------------------------------------------------------===//

#include "ratrain/Model/HFConfig.h"
#include "ratrain/runtime/Data.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/FileIO.h"
#include "ratrain/runtime/Runtime.h"
#include "ratrain/runtime/Session.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/xxhash.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace ratrain;
using namespace ratrain::rt;

namespace {

struct Args {
  std::string model, lossOut;
  int pp = 1, dp = 1;
  uint64_t killAtStep = 0, failSaveAt = 0;
  bool zero = false;
  /// The flags left for rt::SessionOptions::parse.
  std::vector<char *> sessionArgs;
};

Args parseArgs(int argc, char **argv) {
  Args a;
  a.sessionArgs.push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        fatal("missing value for " + flag);
      return argv[++i];
    };
    if (flag == "--model")
      a.model = value();
    else if (flag == "--loss-out")
      a.lossOut = value();
    else if (flag == "--pp")
      a.pp = std::atoi(value().c_str());
    else if (flag == "--dp")
      a.dp = std::atoi(value().c_str());
    else if (flag == "--kill-at-step")
      a.killAtStep = std::strtoull(value().c_str(), nullptr, 10);
    else if (flag == "--zero")
      a.zero = true;
    else if (flag == "--fail-save-at")
      a.failSaveAt = std::strtoull(value().c_str(), nullptr, 10);
    else
      a.sessionArgs.push_back(argv[i]);
  }
  if (a.model.empty())
    fatal("--model is required");
  return a;
}

/// Offsets of everything this rank keeps in DDR: the "plan".
struct Plan {
  struct Param {
    ParamSpec spec;
    uint64_t master, expAvg, expAvgSq, grad, bytes;
    /// ZeRO: elements per shard, the padded full size (dp x shard), the
    /// full fp32 view (padded) and the gradient shard.
    uint64_t shard = 0, padded = 0, view = 0, gradShard = 0;
  };
  std::vector<Param> params;
  uint64_t inputs = 0, labels = 0, fieldBytes = 0; ///< Per micro-batch.
  uint64_t losses = 0;                             ///< One f32 per micro-batch.
  uint64_t acts = 0, actBytes = 0;                 ///< Per micro-batch [T, h].
  uint64_t actGrads = 0;                           ///< Per micro-batch [T, h].
  uint64_t logits = 0, logitBytes = 0;             ///< [T, vocab], last stage.
  uint64_t capacity = 0;

  uint64_t take(uint64_t bytes) {
    uint64_t offset = capacity;
    capacity += (bytes + 63) / 64 * 64;
    return offset;
  }
};

Plan makePlan(const ModelConfig &model, const StagePartition &partition,
              int stage, const SessionOptions &o, int dp, bool zero) {
  Plan plan;
  for (ParamSpec &spec : stageParameters(model, partition, stage)) {
    uint64_t numel = spec.numElements();
    uint64_t bytes = numel * 4;
    Plan::Param p{spec, 0, 0, 0, 0, bytes};
    if (zero) {
      p.shard = (numel + uint64_t(dp) - 1) / uint64_t(dp);
      p.padded = p.shard * uint64_t(dp);
      p.master = plan.take(p.shard * 4);
      p.expAvg = plan.take(p.shard * 4);
      p.expAvgSq = plan.take(p.shard * 4);
      p.gradShard = plan.take(p.shard * 4);
      p.grad = plan.take(p.padded * 4);
      p.view = plan.take(p.padded * 4);
    } else {
      p.master = plan.take(bytes);
      p.expAvg = plan.take(bytes);
      p.expAvgSq = plan.take(bytes);
      p.grad = plan.take(bytes);
    }
    plan.params.push_back(std::move(p));
  }
  uint64_t tokens = uint64_t(o.microBatch * o.seqLen);
  plan.fieldBytes = tokens * 4;
  plan.inputs = plan.take(plan.fieldBytes * o.microBatches);
  plan.labels = plan.take(plan.fieldBytes * o.microBatches);
  plan.losses = plan.take(64 * o.microBatches);
  plan.actBytes = tokens * model.hidden * 4;
  plan.acts = plan.take(plan.actBytes * o.microBatches);
  plan.actGrads = plan.take(plan.actBytes * o.microBatches);
  plan.logitBytes = tokens * model.vocab * 4;
  plan.logits = plan.take(plan.logitBytes);
  return plan;
}

Plan::Param *findParam(Plan &plan, llvm::StringRef name) {
  for (Plan::Param &p : plan.params)
    if (p.spec.name == name)
      return &p;
  return nullptr;
}

} // namespace

int main(int argc, char **argv) {
  Args a = parseArgs(argc, argv);
  SessionOptions defaults;
  defaults.seqLen = 64;
  defaults.microBatch = 2;
  defaults.microBatches = 2;
  defaults.seed = 1234;
  defaults.logPath = "";
  SessionOptions sessionOptions = exitOnError(SessionOptions::parse(
      int(a.sessionArgs.size()), a.sessionArgs.data(), defaults));
  HFImportOptions importOptions;
  importOptions.seqLen = sessionOptions.seqLen;
  ModelConfig model = exitOnError(loadHFConfig(a.model, importOptions));
  exitOnError(model.validate());
  StagePartition partition = StagePartition::even(model.numLayers, a.pp);

  // The plan depends on the stage, known once MPI is up: size the arena for
  // the largest stage (every rank plans all stages; cheap).
  uint64_t capacity = 0;
  for (int s = 0; s < a.pp; ++s)
    capacity = std::max(
        capacity,
        makePlan(model, partition, s, sessionOptions, a.dp, a.zero).capacity);
  RuntimeOptions options;
  options.pp = a.pp;
  options.dp = a.dp;
  options.ddrBytes = capacity;
  Runtime rt(argc, argv, options);
  Session session(rt, model, partition, sessionOptions);
  const SessionOptions &o = session.options();
  Plan plan = makePlan(model, partition, rt.stage(), o, rt.dpSize(), a.zero);
  Arena &ddr = rt.ddr();

  // Prologue: initial weights, Adam moments at zero (the arena is zeroed),
  // registration for checkpoints.
  for (Plan::Param &p : plan.params) {
    // Weights used by compute: the master itself, or the ZeRO view.
    Buffer weights = ddr.buffer(a.zero ? p.view : p.master, p.bytes);
    if (p.spec.shape.size() == 1)
      initParam(weights, ElemType::F32, InitKind::Ones, p.spec.name);
    else
      initParam(weights, ElemType::F32, InitKind::Normal, p.spec.name, 0.02);
    if (!a.zero) {
      session.addParam({p.spec.name, p.spec.shape, weights,
                        ddr.buffer(p.expAvg, p.bytes),
                        ddr.buffer(p.expAvgSq, p.bytes)});
      continue;
    }
    ParamSlot slot;
    slot.name = p.spec.name;
    slot.shape = p.spec.shape;
    slot.master = ddr.buffer(p.master, p.shard * 4);
    slot.expAvg = ddr.buffer(p.expAvg, p.shard * 4);
    slot.expAvgSq = ddr.buffer(p.expAvgSq, p.shard * 4);
    slot.shardOffset = uint64_t(rt.dpIndex()) * p.shard;
    slot.shardElements = p.shard;
    slot.view = weights;
    slot.viewType = ElemType::F32;
    // The master shard starts as this rank's range of the view.
    uint64_t numel = p.spec.numElements();
    uint64_t valid = slot.shardOffset < numel
                         ? std::min(p.shard, numel - slot.shardOffset)
                         : 0;
    std::memcpy(slot.master.data, weights.data + slot.shardOffset * 4,
                valid * 4);
    session.addParam(slot);
  }
  session.start();

  std::FILE *lossOut = nullptr;
  if (rt.rank() == 0 && !a.lossOut.empty()) {
    lossOut = std::fopen(a.lossOut.c_str(), "a");
    if (!lossOut)
      fatal(a.lossOut + ": cannot open");
  }

  Plan::Param *embed = findParam(plan, "model.embed_tokens.weight");
  Plan::Param *head = findParam(plan, "lm_head.weight");
  const int64_t h = model.hidden, vocab = model.vocab;
  const int64_t tokensPerMB = o.microBatch * o.seqLen;
  const float gradScale =
      1.0f / float(tokensPerMB * o.microBatches * rt.dpSize());
  std::vector<Plan::Param *> trained;
  if (embed)
    trained.push_back(embed);
  if (head)
    trained.push_back(head);

  while (session.beginStep()) {
    uint64_t step = session.step();
    for (Plan::Param *p : trained)
      std::memset(ddr.buffer(p->grad, p->bytes).data, 0, p->bytes);
    std::vector<Token> pending;

    // Forward: every micro-batch.
    for (int mb = 0; mb < o.microBatches; ++mb) {
      Buffer act = ddr.buffer(plan.acts + mb * plan.actBytes, plan.actBytes);
      if (rt.isFirstStage()) {
        Buffer inputs =
            ddr.buffer(plan.inputs + mb * plan.fieldBytes, plan.fieldBytes);
        session.loadBatch(BatchField::Inputs, inputs, mb);
        const int32_t *ids = inputs.as<int32_t>();
        const float *e =
            ddr.get<float>(a.zero ? embed->view : embed->master, vocab * h);
        float *x = act.as<float>();
        for (int64_t t = 0; t < tokensPerMB; ++t)
          std::memcpy(x + t * h, e + int64_t(ids[t]) * h, h * 4);
      } else {
        rt.wait(rt.recvFromStage(rt.stage() - 1, 2 * mb, act));
      }
      if (a.killAtStep == step && rt.rank() == rt.worldSize() - 1 && mb == 0) {
        std::fprintf(stderr, "rank %d: killed in the middle of step %llu\n",
                     rt.rank(), (unsigned long long)step);
        std::fflush(stderr);
        std::raise(SIGKILL);
      }
      if (!rt.isLastStage()) {
        pending.push_back(rt.sendToStage(rt.stage() + 1, 2 * mb, act));
        continue;
      }
      // Last stage: logits, loss and gradients of this micro-batch.
      Buffer labels =
          ddr.buffer(plan.labels + mb * plan.fieldBytes, plan.fieldBytes);
      session.loadBatch(BatchField::Labels, labels, mb);
      const int32_t *targets = labels.as<int32_t>();
      const float *x = act.as<float>();
      const float *w =
          ddr.get<float>(a.zero ? head->view : head->master, vocab * h);
      float *dw = ddr.get<float>(head->grad, vocab * h);
      float *logits = ddr.get<float>(plan.logits, tokensPerMB * vocab);
      float *dx =
          ddr.get<float>(plan.actGrads + mb * plan.actBytes, tokensPerMB * h);
      double lossSum = 0;
      for (int64_t t = 0; t < tokensPerMB; ++t) {
        int32_t target = targets[t];
        float *z = logits + t * vocab;
        float maxLogit = -INFINITY;
        for (int64_t v = 0; v < vocab; ++v) {
          float sum = 0;
          for (int64_t k = 0; k < h; ++k)
            sum += x[t * h + k] * w[v * h + k];
          z[v] = sum;
          maxLogit = std::max(maxLogit, sum);
        }
        double norm = 0;
        for (int64_t v = 0; v < vocab; ++v)
          norm += std::exp(double(z[v] - maxLogit));
        lossSum += std::log(norm) - double(z[target] - maxLogit);
        // dlogits = (softmax - onehot) * scale, in place.
        for (int64_t v = 0; v < vocab; ++v)
          z[v] = float(std::exp(double(z[v] - maxLogit)) / norm);
        z[target] -= 1.0f;
        for (int64_t v = 0; v < vocab; ++v)
          z[v] *= gradScale;
        for (int64_t k = 0; k < h; ++k)
          dx[t * h + k] = 0;
        for (int64_t v = 0; v < vocab; ++v) {
          float g = z[v];
          for (int64_t k = 0; k < h; ++k) {
            dw[v * h + k] += g * x[t * h + k];
            dx[t * h + k] += g * w[v * h + k];
          }
        }
      }
      Buffer loss = ddr.buffer(plan.losses + 64 * mb, 4);
      loss.as<float>()[0] = float(lossSum / double(tokensPerMB));
      session.reportLoss(loss, mb);
    }

    // Backward: activation gradients travel back to stage 0.
    for (int mb = 0; mb < o.microBatches; ++mb) {
      Buffer grad =
          ddr.buffer(plan.actGrads + mb * plan.actBytes, plan.actBytes);
      if (!rt.isLastStage())
        rt.wait(rt.recvFromStage(rt.stage() + 1, 2 * mb + 1, grad));
      if (!rt.isFirstStage()) {
        pending.push_back(rt.sendToStage(rt.stage() - 1, 2 * mb + 1, grad));
        continue;
      }
      const int32_t *ids =
          ddr.get<int32_t>(plan.inputs + mb * plan.fieldBytes, tokensPerMB);
      float *de = ddr.get<float>(embed->grad, vocab * h);
      const float *dx = grad.as<float>();
      for (int64_t t = 0; t < tokensPerMB; ++t) {
        float *row = de + int64_t(ids[t]) * h;
        for (int64_t k = 0; k < h; ++k)
          row[k] += dx[t * h + k];
      }
    }
    rt.waitAll(pending);

    // Gradients: all-reduced over the data group (the scale already divides
    // by dp), or with ZeRO reduce-scattered into this rank's shard; issued for
    // every trained tensor before waiting on any.
    std::vector<Token> reductions;
    for (Plan::Param *p : trained)
      reductions.push_back(
          a.zero ? rt.reduceScatter(
                       Group::Data, ddr.buffer(p->grad, p->padded * 4),
                       ddr.buffer(p->gradShard, p->shard * 4), ElemType::F32)
                 : rt.allReduce(Group::Data, ddr.buffer(p->grad, p->bytes),
                                ElemType::F32));
    rt.waitAll(reductions);
    // Adam on the whole tensor or on the shard.
    const double lr = 1e-2, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
    double correction1 = 1 - std::pow(beta1, double(step));
    double correction2 = 1 - std::pow(beta2, double(step));
    for (Plan::Param *p : trained) {
      uint64_t n = a.zero ? p->shard : p->spec.numElements();
      float *w = ddr.get<float>(p->master, n);
      float *m = ddr.get<float>(p->expAvg, n);
      float *v = ddr.get<float>(p->expAvgSq, n);
      const float *g = ddr.get<float>(a.zero ? p->gradShard : p->grad, n);
      for (uint64_t i = 0; i < n; ++i) {
        m[i] = float(beta1 * m[i] + (1 - beta1) * g[i]);
        v[i] = float(beta2 * v[i] + (1 - beta2) * double(g[i]) * g[i]);
        double update =
            (m[i] / correction1) / (std::sqrt(v[i] / correction2) + eps);
        w[i] = float(w[i] - lr * update);
      }
    }
    if (a.zero) {
      // Refresh the parameter views from the updated shards.
      std::vector<Token> gathers;
      for (Plan::Param *p : trained)
        gathers.push_back(rt.allGather(Group::Data,
                                       ddr.buffer(p->master, p->shard * 4),
                                       ddr.buffer(p->view, p->padded * 4)));
      rt.waitAll(gathers);
    }

    if (a.failSaveAt == step && rt.isLastStage())
      AtomicFile::setWriteFailureAfterForTesting(4096);
    session.endStep();
    if (lossOut) {
      // Hex floats: exact, so runs can be compared bit for bit.
      std::fprintf(lossOut, "%llu %a\n", (unsigned long long)step,
                   session.lastLoss());
      std::fflush(lossOut);
    }
  }
  if (lossOut)
    std::fclose(lossOut);
  return 0;
}
