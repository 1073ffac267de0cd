//===- Session.h - Steps, data, loss log and checkpoints --------*- C++ -*-===//
//
// The driver around an emitted program's per-iteration body: it owns the
// data loader (mt3k.load_batch), collects reported losses
// (mt3k.report_loss), logs each step, saves checkpoints every N steps and
// resumes from the latest one. An emitted program looks like
//
//   int main(int argc, char **argv) {
//     rt::Runtime rt(argc, argv, runtimeOptions);
//     rt::Session session(rt, model, partition,
//                         rt::exitOnError(rt::SessionOptions::parse(
//                             argc, argv, sessionDefaults)));
//     prologue(rt, session);   // buffers, init_param, session.addParam(...)
//     for (session.start(); session.beginStep();) {
//       body(rt, session);     // kernels, DMAs, collectives, waits
//       session.endStep();
//     }
//   }
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_SESSION_H
#define RATRAIN_RUNTIME_SESSION_H

#include "ratrain/runtime/Checkpoint.h"
#include "ratrain/runtime/Data.h"
#include "ratrain/runtime/LRSchedule.h"
#include "ratrain/runtime/Runtime.h"
#include "ratrain/runtime/StepLog.h"
#include "ratrain/runtime/Trace.h"

#include <chrono>
#include <optional>

namespace ratrain::rt {

struct SessionOptions {
  std::string dataPath;      ///< --data FILE (a token file).
  std::string checkpointDir; ///< --ckpt DIR.
  uint64_t steps = 0;        ///< --steps N.
  uint64_t saveEvery = 0;    ///< --save-every N (0: only at the end).
  bool resume = false;       ///< --resume: continue from DIR's latest.
  /// --init-from DIR: start from the weights of a HuggingFace model
  /// directory (HFDirectory.h); with --steps 0 and --ckpt, only save them
  /// as the step-0 checkpoint.
  std::string initFrom;
  std::string logPath = "-"; ///< --log FILE ("-": stdout, "": none).
  uint64_t seed = 0;         ///< --seed S: data order.
  /// --init-seed S: the parameters' initialization (Init.h; 0: the
  /// default weights). --init-from and --resume replace them anyway.
  uint64_t initSeed = 0;
  /// The learning-rate schedule (LRSchedule.h): --lr (default: the
  /// program's compiled rate), --lr-schedule constant|cosine|linear,
  /// --warmup-steps, --min-lr, --decay-steps (0: --steps).
  std::optional<double> lr;
  LRDecay lrDecay = LRDecay::Constant;
  uint64_t warmupSteps = 0;
  double minLr = 0;
  uint64_t decaySteps = 0;
  /// Validation (docs/runtime.md, "Validation"): every --eval-every N steps
  /// (and after the last), --eval-steps K steps of held-out data, from
  /// --eval-data FILE or the last --eval-split F of the training data's
  /// windows (which training then skips), logged as "eval_loss".
  uint64_t evalEvery = 0;
  uint64_t evalSteps = 1;
  std::string evalDataPath;
  double evalSplit = 0;
  /// The per-op trace (docs/runtime.md, "Per-op trace"): --trace FILE writes
  /// a Chrome/Perfetto trace of steps --trace-steps FIRST[-LAST] (default:
  /// 2-4, within --steps) of every rank.
  std::string tracePath;
  TraceRange traceSteps;
  /// Fixed by the compiled program (the plan), not by flags.
  int64_t seqLen = 0;
  int64_t microBatch = 1;
  int64_t microBatches = 1;
  /// Uneven data-parallel shares (plan dp_shares): the micro-batches each
  /// replica runs, microBatches their largest; empty: every replica runs
  /// microBatches.
  std::vector<int64_t> replicaMicroBatches;
  /// --emulate-classes: on a program compiled for a machine with classes of
  /// clusters, make this rank as much slower as its class is (the program's
  /// per-rank slowdown; docs/runtime.md, "Heterogeneous clusters").
  bool emulateClasses = false;

  /// Reads the flags above (both `--flag value` and `--flag=value`) from
  /// argv over `defaults`; unknown flags and malformed numbers are errors
  /// that name the flag.
  /// The learning-rate schedule of these options with `peak` unless --lr.
  LRSchedule schedule(double peak) const {
    LRSchedule result;
    result.decay = lrDecay;
    result.peak = lr.value_or(peak);
    result.min = minLr;
    result.warmupSteps = warmupSteps;
    result.decaySteps = decaySteps ? decaySteps : steps;
    return result;
  }

  static llvm::Expected<SessionOptions> parse(int argc, char **argv,
                                              const SessionOptions &defaults);
  /// The flags parse() takes, one per line, for an emitted program's --help.
  static const char *flagsHelp();
  /// True when the command line asks for help (--help or -h).
  static bool wantsHelp(int argc, char **argv);
};

class Session {
public:
  /// Opens the token file (every rank: a missing or corrupt file fails on
  /// all of them) and the step log (rank 0). Errors are fatal.
  Session(Runtime &rt, const ModelConfig &model, StagePartition partition,
          SessionOptions options);

  /// Registers a parameter this rank owns, for checkpoints.
  void addParam(const ParamSlot &slot) { slots.push_back(slot); }

  /// Call after the prologue: when resuming, loads the registered parameters
  /// and Adam moments and the data position from the latest checkpoint
  /// (fatal on any error, e.g. a wrong model shape). Returns the first step.
  uint64_t start();
  /// With --steps 0 and --ckpt (after start() and the views derived from
  /// the masters): saves the starting weights as the step-0 checkpoint, so
  /// --init-from converts a HuggingFace directory into a checkpoint.
  void saveInitialCheckpoint();
  /// Starts the next step: a training step, or after one that ends an
  /// evaluation interval the --eval-steps validation steps (the same
  /// program: forward and backward on held-out data with no update, see
  /// evaluating()); false when all steps are done.
  bool beginStep();
  /// Whether the current step is a validation step: AdamW only refreshes
  /// the parameter views from the unchanged masters, nothing is learned.
  bool evaluating() const { return inEval; }
  /// mt3k.load_batch of micro-batch `microBatch` of the current step.
  void loadBatch(BatchField field, Buffer dest, int64_t microBatch);
  /// Micro-batches this rank's replica runs in a step (its dp share).
  int64_t replicaMicroBatches() const;
  /// Micro-batches of one step over all replicas.
  int64_t totalMicroBatches() const;
  /// Whether this rank runs micro-batch `microBatch` (below its share).
  bool runsMicroBatch(int64_t microBatch) const {
    return microBatch < replicaMicroBatches();
  }
  /// mt3k.report_loss: reads the f32 scalar at `loss`.
  void reportLoss(Buffer loss, int64_t microBatch);
  /// Ends the step: advances the data position, logs the step (collective),
  /// saves a checkpoint when one is due (collective; fatal on failure, which
  /// leaves existing checkpoints intact).
  void endStep();

  /// The current (or, before the first beginStep, the last completed) step.
  uint64_t step() const { return currentStep; }
  /// The learning rate of the current step under the schedule, whose peak
  /// is --lr or else `compiled` (the rate the program was compiled with).
  double learningRate(double compiled);
  /// Gradient clipping: the step's global gradient norm (every clipped
  /// AdamW call of the step passes the same value), logged as "grad_norm".
  void recordGradNorm(double norm) { stepGradNorm = norm; }

  DataPosition dataPosition() const { return position; }
  const SessionOptions &options() const { return opts; }
  /// Mean of the losses reported in the last completed step (NaN where
  /// nothing was reported: not the last stage).
  double lastLoss() const { return lastStepLoss; }
  /// The mean validation loss of the last evaluation (NaN before one).
  double lastEvalLossValue() const { return lastEvalLoss; }

private:
  /// Saves the current step's checkpoint under --ckpt.
  void save();
  /// Whether validation runs after training step `step`.
  bool evalDue(uint64_t step) const {
    return evalLoader && opts.evalEvery &&
           (step % opts.evalEvery == 0 || step == opts.steps);
  }
  /// Ends a validation step; after the last of an evaluation, logs the
  /// mean loss (collective).
  void endEvalStep();

  Runtime &rt;
  ModelConfig model;
  StagePartition partition;
  SessionOptions opts;
  std::optional<DataLoader> loader;
  /// The held-out data (validation); every evaluation reads it from the
  /// start, so successive evaluations see the same batches.
  std::optional<DataLoader> evalLoader;
  bool inEval = false;
  /// Validation steps are due before the next training step.
  bool evalPending = false;
  double lastEvalLoss = NAN;
  uint64_t evalDone = 0; ///< validation steps run in this evaluation
  double evalLossSum = 0;
  int64_t evalLossCount = 0;
  std::optional<StepLogger> logger;
  /// Writes the trace once its last step ran (or training ended first).
  void finishTrace();
  bool traceWritten = false;
  std::vector<ParamSlot> slots;
  uint64_t currentStep = 0;
  DataPosition position;
  double lossSum = 0;
  int64_t lossCount = 0;
  double lastStepLoss = 0;
  /// The compiled learning rate the first AdamW call passed (NaN before).
  double compiledLr = NAN;
  /// The step's global gradient norm (NaN: the program does not clip).
  double stepGradNorm = NAN;
  bool started = false;
  std::chrono::steady_clock::time_point stepStart;
};

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_SESSION_H
