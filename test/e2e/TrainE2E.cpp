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
//   ratrain-train-e2e --model M --data D --steps N [--pp P] [--dp D]
//     [--ckpt DIR] [--save-every K] [--resume] [--kill-at-step S]
//     [--fail-save-at S] [--loss-out FILE] [--log FILE]
//
//===----------------------------------------------------------------------===//

#include "ratrain/Model/HFConfig.h"
#include "ratrain/runtime/Data.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/FileIO.h"
#include "ratrain/runtime/Runtime.h"

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
  std::string model, data, ckpt, lossOut, log;
  int pp = 1, dp = 1;
  uint64_t steps = 10, saveEvery = 0, killAtStep = 0, failSaveAt = 0;
  bool resume = false;
  int64_t seqLen = 64, microBatch = 2, microBatches = 2;
  uint64_t seed = 1234;
};

Args parseArgs(int argc, char **argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        fatal("missing value for " + flag);
      return argv[++i];
    };
    if (flag == "--model")
      a.model = value();
    else if (flag == "--data")
      a.data = value();
    else if (flag == "--ckpt")
      a.ckpt = value();
    else if (flag == "--loss-out")
      a.lossOut = value();
    else if (flag == "--log")
      a.log = value();
    else if (flag == "--pp")
      a.pp = std::atoi(value().c_str());
    else if (flag == "--dp")
      a.dp = std::atoi(value().c_str());
    else if (flag == "--steps")
      a.steps = std::strtoull(value().c_str(), nullptr, 10);
    else if (flag == "--save-every")
      a.saveEvery = std::strtoull(value().c_str(), nullptr, 10);
    else if (flag == "--kill-at-step")
      a.killAtStep = std::strtoull(value().c_str(), nullptr, 10);
    else if (flag == "--fail-save-at")
      a.failSaveAt = std::strtoull(value().c_str(), nullptr, 10);
    else if (flag == "--resume")
      a.resume = true;
    else
      fatal("unknown flag '" + flag + "'");
  }
  if (a.model.empty() || a.data.empty())
    fatal("--model and --data are required");
  return a;
}

/// Offsets of everything this rank keeps in DDR: the "plan".
struct Plan {
  struct Param {
    ParamSpec spec;
    uint64_t master, expAvg, expAvgSq, grad, bytes;
  };
  std::vector<Param> params;
  uint64_t batch = 0, batchBytes = 0;         ///< int32 tokens (stage 0/last).
  uint64_t acts = 0, actBytes = 0;            ///< Per micro-batch [T, h].
  uint64_t actGrads = 0;                      ///< Per micro-batch [T, h].
  uint64_t logits = 0, logitBytes = 0;        ///< [T, vocab], last stage.
  uint64_t capacity = 0;

  uint64_t take(uint64_t bytes) {
    uint64_t offset = capacity;
    capacity += (bytes + 63) / 64 * 64;
    return offset;
  }
};

Plan makePlan(const ModelConfig &model, const StagePartition &partition,
              int stage, const Args &a) {
  Plan plan;
  for (ParamSpec &spec : stageParameters(model, partition, stage)) {
    uint64_t bytes = spec.numElements() * 4;
    Plan::Param p{spec, 0, 0, 0, 0, bytes};
    p.master = plan.take(bytes);
    p.expAvg = plan.take(bytes);
    p.expAvgSq = plan.take(bytes);
    p.grad = plan.take(bytes);
    plan.params.push_back(std::move(p));
  }
  uint64_t tokens = uint64_t(a.microBatch * a.seqLen);
  plan.batchBytes = uint64_t(a.microBatch * (a.seqLen + 1)) * 4;
  plan.batch = plan.take(plan.batchBytes * a.microBatches);
  plan.actBytes = tokens * model.hidden * 4;
  plan.acts = plan.take(plan.actBytes * a.microBatches);
  plan.actGrads = plan.take(plan.actBytes * a.microBatches);
  plan.logitBytes = tokens * model.vocab * 4;
  plan.logits = plan.take(plan.logitBytes);
  return plan;
}

/// Deterministic initialization from the parameter name and the seed.
void initialize(Buffer master, const ParamSpec &spec, uint64_t seed) {
  float *w = master.as<float>();
  uint64_t n = spec.numElements();
  if (spec.shape.size() == 1) { // RMSNorm weights.
    for (uint64_t i = 0; i < n; ++i)
      w[i] = 1.0f;
    return;
  }
  uint64_t state = llvm::xxh3_64bits(spec.name) ^ seed;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    double uniform = double(z >> 11) / double(1ull << 53); // [0, 1)
    w[i] = float((uniform * 2 - 1) * 0.02 * std::sqrt(3.0));
  }
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
  HFImportOptions importOptions;
  importOptions.seqLen = a.seqLen;
  ModelConfig model = exitOnError(loadHFConfig(a.model, importOptions));
  exitOnError(model.validate());
  StagePartition partition = StagePartition::even(model.numLayers, a.pp);

  // The plan depends on the stage, known once MPI is up: size the arena for
  // the largest stage (every rank plans all stages; cheap).
  uint64_t capacity = 0;
  for (int s = 0; s < a.pp; ++s)
    capacity = std::max(capacity, makePlan(model, partition, s, a).capacity);
  RuntimeOptions options;
  options.pp = a.pp;
  options.dp = a.dp;
  options.ddrBytes = capacity;
  Runtime rt(argc, argv, options);
  Plan plan = makePlan(model, partition, rt.stage(), a);
  Arena &ddr = rt.ddr();

  std::vector<ParamSlot> slots;
  for (Plan::Param &p : plan.params) {
    slots.push_back({p.spec.name, p.spec.shape, ddr.buffer(p.master, p.bytes),
                     ddr.buffer(p.expAvg, p.bytes),
                     ddr.buffer(p.expAvgSq, p.bytes)});
    initialize(slots.back().master, p.spec, a.seed);
  }

  // Data: the first and last stages of a replica read the same windows
  // (inputs on the first, labels on the last).
  bool needsData = rt.isFirstStage() || rt.isLastStage();
  std::optional<DataLoader> loader;
  if (needsData) {
    TokenFile tokens = exitOnError(TokenFile::open(a.data));
    if (tokens.vocab() > uint64_t(model.vocab))
      fatal(llvm::formatv("{0}: vocabulary {1} exceeds the model's {2}",
                          a.data, tokens.vocab(), model.vocab));
    loader.emplace(exitOnError(DataLoader::create(
        std::move(tokens),
        {a.seqLen, a.microBatch, rt.dpSize(), rt.dpIndex(), a.seed})));
  }

  uint64_t firstStep = 1;
  if (a.resume) {
    TrainerState state = exitOnError(rt.loadCheckpoint(a.ckpt, model, slots));
    if (state.seed != a.seed)
      fatal(llvm::formatv("checkpoint seed {0} differs from --seed {1}",
                          state.seed, a.seed));
    if (loader)
      loader->seek(state.data);
    firstStep = state.step + 1;
  }

  std::optional<StepLogger> logger;
  if (rt.rank() == 0)
    logger.emplace(exitOnError(StepLogger::create(a.log)));
  std::FILE *lossOut = nullptr;
  if (rt.rank() == 0 && !a.lossOut.empty()) {
    lossOut = std::fopen(a.lossOut.c_str(), "a");
    if (!lossOut)
      fatal(a.lossOut + ": cannot open");
  }

  Plan::Param *embed = findParam(plan, "model.embed_tokens.weight");
  Plan::Param *head = findParam(plan, "lm_head.weight");
  const int64_t h = model.hidden, vocab = model.vocab;
  const int64_t tokensPerMB = a.microBatch * a.seqLen;
  const float gradScale = 1.0f / float(tokensPerMB * a.microBatches * rt.dpSize());
  std::vector<Plan::Param *> trained;
  if (embed)
    trained.push_back(embed);
  if (head)
    trained.push_back(head);

  for (uint64_t step = firstStep; step <= a.steps; ++step) {
    auto start = std::chrono::steady_clock::now();
    for (Plan::Param *p : trained)
      std::memset(ddr.buffer(p->grad, p->bytes).data, 0, p->bytes);
    std::vector<Token> pending;
    double lossSum = 0;

    // Forward: every micro-batch.
    for (int mb = 0; mb < a.microBatches; ++mb) {
      Buffer batch = ddr.buffer(plan.batch + mb * plan.batchBytes,
                                plan.batchBytes);
      Buffer act = ddr.buffer(plan.acts + mb * plan.actBytes, plan.actBytes);
      if (loader)
        loader->next(batch);
      if (rt.isFirstStage()) {
        const int32_t *ids = batch.as<int32_t>();
        const float *e = ddr.get<float>(embed->master, vocab * h);
        float *x = act.as<float>();
        for (int64_t b = 0; b < a.microBatch; ++b)
          for (int64_t t = 0; t < a.seqLen; ++t)
            std::memcpy(x + (b * a.seqLen + t) * h,
                        e + int64_t(ids[b * (a.seqLen + 1) + t]) * h, h * 4);
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
      const float *x = act.as<float>();
      const float *w = ddr.get<float>(head->master, vocab * h);
      float *dw = ddr.get<float>(head->grad, vocab * h);
      float *logits = ddr.get<float>(plan.logits, tokensPerMB * vocab);
      float *dx = ddr.get<float>(plan.actGrads + mb * plan.actBytes,
                                 tokensPerMB * h);
      const int32_t *ids = batch.as<int32_t>();
      for (int64_t t = 0; t < tokensPerMB; ++t) {
        int64_t b = t / a.seqLen, pos = t % a.seqLen;
        int32_t target = ids[b * (a.seqLen + 1) + pos + 1];
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
    }

    // Backward: activation gradients travel back to stage 0.
    for (int mb = 0; mb < a.microBatches; ++mb) {
      Buffer grad = ddr.buffer(plan.actGrads + mb * plan.actBytes,
                               plan.actBytes);
      if (!rt.isLastStage())
        rt.wait(rt.recvFromStage(rt.stage() + 1, 2 * mb + 1, grad));
      if (!rt.isFirstStage()) {
        pending.push_back(rt.sendToStage(rt.stage() - 1, 2 * mb + 1, grad));
        continue;
      }
      const int32_t *ids = ddr.get<int32_t>(plan.batch + mb * plan.batchBytes,
                                            plan.batchBytes / 4);
      float *de = ddr.get<float>(embed->grad, vocab * h);
      const float *dx = grad.as<float>();
      for (int64_t b = 0; b < a.microBatch; ++b)
        for (int64_t t = 0; t < a.seqLen; ++t) {
          float *row = de + int64_t(ids[b * (a.seqLen + 1) + t]) * h;
          const float *g = dx + (b * a.seqLen + t) * h;
          for (int64_t k = 0; k < h; ++k)
            row[k] += g[k];
        }
    }
    rt.waitAll(pending);

    // Gradient all-reduce over the data group, issued for every trained
    // tensor before waiting on any.
    std::vector<Token> reductions;
    for (Plan::Param *p : trained)
      reductions.push_back(rt.allReduce(Group::Data,
                                        ddr.buffer(p->grad, p->bytes),
                                        ElemType::F32));
    rt.waitAll(reductions);
    // Adam.
    const double lr = 1e-2, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
    double correction1 = 1 - std::pow(beta1, double(step));
    double correction2 = 1 - std::pow(beta2, double(step));
    for (Plan::Param *p : trained) {
      uint64_t n = p->spec.numElements();
      float *w = ddr.get<float>(p->master, n);
      float *m = ddr.get<float>(p->expAvg, n);
      float *v = ddr.get<float>(p->expAvgSq, n);
      const float *g = ddr.get<float>(p->grad, n);
      for (uint64_t i = 0; i < n; ++i) {
        m[i] = float(beta1 * m[i] + (1 - beta1) * g[i]);
        v[i] = float(beta2 * v[i] + (1 - beta2) * double(g[i]) * g[i]);
        double update = (m[i] / correction1) /
                        (std::sqrt(v[i] / correction2) + eps);
        w[i] = float(w[i] - lr * update);
      }
    }

    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    double stepLoss = lossSum / double(tokensPerMB * a.microBatches);
    double tokens = double(tokensPerMB * a.microBatches * rt.dpSize());
    double logged = rt.logStep(logger ? &*logger : nullptr, step, a.steps,
                               stepLoss, tokens, seconds);
    if (lossOut) {
      // Hex floats: exact, so runs can be compared bit for bit.
      std::fprintf(lossOut, "%llu %a\n", (unsigned long long)step, logged);
      std::fflush(lossOut);
    }

    if (a.saveEvery && step % a.saveEvery == 0) {
      if (a.failSaveAt == step && rt.stage() == rt.numStages() - 1)
        AtomicFile::setWriteFailureAfterForTesting(4096);
      TrainerState state;
      state.step = step;
      state.data = loader ? loader->position() : DataPosition{};
      state.seed = a.seed;
      state.pp = rt.numStages();
      state.dp = rt.dpSize();
      // Middle stages do not read data: take the position from stage 0.
      int64_t samples = int64_t(state.data.samples);
      Buffer position{reinterpret_cast<std::byte *>(&samples), 0, 8,
                      MemorySpace::DDR};
      rt.wait(rt.broadcast(Group::Pipeline, position, 0));
      state.data.samples = uint64_t(samples);
      exitOnError(rt.saveCheckpoint(a.ckpt, model, partition, state, slots));
      if (rt.rank() == 0)
        std::fprintf(stderr, "saved checkpoint of step %llu under %s\n",
                     (unsigned long long)step, a.ckpt.c_str());
    }
  }
  if (logger)
    logger->finish();
  if (lossOut)
    std::fclose(lossOut);
  return 0;
}
