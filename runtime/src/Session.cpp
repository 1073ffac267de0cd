//===- Session.cpp - Steps, data, loss log and checkpoints ----------------===//

#include "ratrain/runtime/Session.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/FileIO.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace ratrain;
using namespace ratrain::rt;

const char *SessionOptions::flagsHelp() {
  return "  --data FILE            token file to train on (ratrain-tokenize; "
         "u16:/u32: flat ids, Megatron .idx/.bin)\n"
         "  --steps N              optimizer steps\n"
         "  --log FILE             JSON line per step ('-' stdout, the "
         "default; '' none)\n"
         "  --ckpt DIR             checkpoints; --save-every N steps and at "
         "the end\n"
         "  --resume               continue from DIR's latest checkpoint\n"
         "  --init-from DIR        start from a HuggingFace model directory\n"
         "  --seed S               data order;  --init-seed S  initial "
         "weights\n"
         "  --lr X                 peak learning rate (default: the compiled "
         "one)\n"
         "  --lr-schedule KIND     constant | cosine | linear, with "
         "--warmup-steps N,\n"
         "                         --min-lr X, --decay-steps N\n"
         "  --eval-every N         validation every N steps on --eval-data "
         "FILE or\n"
         "                         --eval-split F (held out), --eval-steps K "
         "batches\n"
         "  --trace FILE           Chrome/Perfetto trace of --trace-steps "
         "A[-B] (default 2-4)\n"
         "  --emulate-classes      run as slow as this rank's class of "
         "a heterogeneous machine\n"
         "  --help                 this text\n";
}

bool SessionOptions::wantsHelp(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--help" || arg == "-h")
      return true;
  }
  return false;
}

llvm::Expected<SessionOptions>
SessionOptions::parse(int argc, char **argv, const SessionOptions &defaults) {
  SessionOptions options = defaults;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (!arg.starts_with("--"))
      return makeError(llvm::formatv("unexpected argument '{0}'", arg));
    // Not a structured binding: the lambdas below capture `flag` (C++17
    // lambdas cannot capture a binding; clang 14 refuses it).
    std::pair<llvm::StringRef, llvm::StringRef> parts = arg.split('=');
    llvm::StringRef flag = parts.first, inlineValue = parts.second;
    bool hasInline = arg.contains('=');
    if (flag == "--resume") {
      options.resume = true;
      continue;
    }
    if (flag == "--emulate-classes") {
      options.emulateClasses = true;
      continue;
    }
    std::string value;
    if (hasInline) {
      value = inlineValue.str();
    } else {
      if (i + 1 >= argc)
        return makeError(llvm::formatv("{0} needs a value", flag));
      value = argv[++i];
    }
    auto real = [&](double &out) -> llvm::Error {
      if (llvm::StringRef(value).getAsDouble(out) || !std::isfinite(out) ||
          out < 0)
        return makeError(llvm::formatv("{0}: '{1}' is not a non-negative "
                                       "number",
                                       flag, value));
      return llvm::Error::success();
    };
    auto number = [&](uint64_t &out) -> llvm::Error {
      if (llvm::StringRef(value).getAsInteger(10, out))
        return makeError(llvm::formatv("{0}: '{1}' is not a non-negative "
                                       "integer",
                                       flag, value));
      return llvm::Error::success();
    };
    llvm::Error error = llvm::Error::success();
    if (flag == "--data")
      options.dataPath = value;
    else if (flag == "--ckpt")
      options.checkpointDir = value;
    else if (flag == "--init-from")
      options.initFrom = value;
    else if (flag == "--log")
      options.logPath = value;
    else if (flag == "--steps")
      error = number(options.steps);
    else if (flag == "--save-every")
      error = number(options.saveEvery);
    else if (flag == "--seed")
      error = number(options.seed);
    else if (flag == "--init-seed")
      error = number(options.initSeed);
    else if (flag == "--lr") {
      double lr = 0;
      error = real(lr);
      options.lr = lr;
    } else if (flag == "--min-lr")
      error = real(options.minLr);
    else if (flag == "--warmup-steps")
      error = number(options.warmupSteps);
    else if (flag == "--decay-steps")
      error = number(options.decaySteps);
    else if (flag == "--eval-every")
      error = number(options.evalEvery);
    else if (flag == "--eval-steps")
      error = number(options.evalSteps);
    else if (flag == "--eval-data")
      options.evalDataPath = value;
    else if (flag == "--eval-split") {
      error = real(options.evalSplit);
      if (!error && options.evalSplit >= 1)
        return makeError(llvm::formatv("--eval-split: {0} is not below 1 (a "
                                       "fraction of the training data)",
                                       value));
    } else if (flag == "--trace")
      options.tracePath = value;
    else if (flag == "--trace-steps") {
      llvm::Expected<TraceRange> range = parseTraceRange(value);
      if (!range)
        return range.takeError();
      options.traceSteps = *range;
    } else if (flag == "--lr-schedule") {
      std::optional<LRDecay> decay = parseLRDecay(value);
      if (!decay)
        return makeError(llvm::formatv("--lr-schedule: '{0}' is not "
                                       "constant, cosine or linear",
                                       value));
      options.lrDecay = *decay;
    } else
      return makeError(llvm::formatv("unknown flag '{0}'", flag));
    if (error)
      return error;
  }
  if (options.resume && options.checkpointDir.empty())
    return makeError("--resume needs --ckpt DIR");
  // The schedule's values, with --lr or any peak (the compiled rate is
  // checked at the first update).
  if (llvm::Error error =
          options.schedule(options.lr.value_or(options.minLr)).validate())
    return std::move(error);
  if (options.evalEvery && options.evalDataPath.empty() &&
      options.evalSplit == 0)
    return makeError("--eval-every needs held-out data: --eval-data FILE or "
                     "--eval-split FRACTION");
  if (!options.evalDataPath.empty() && options.evalSplit > 0)
    return makeError("--eval-data and --eval-split exclude each other");
  if ((!options.evalDataPath.empty() || options.evalSplit > 0) &&
      !options.evalEvery)
    return makeError("--eval-data and --eval-split need --eval-every N");
  if (options.evalEvery && options.evalSteps == 0)
    return makeError("--eval-steps: 0 validation steps per evaluation");
  if (options.traceSteps.first && options.tracePath.empty())
    return makeError("--trace-steps needs --trace FILE");
  if (!options.tracePath.empty() && !options.traceSteps.first) {
    // Default: steps 2 to 4 (the first step warms caches and pools up).
    options.traceSteps.first = options.steps < 2 ? 1 : 2;
    options.traceSteps.last = std::max<uint64_t>(
        options.traceSteps.first, std::min<uint64_t>(4, options.steps));
  }
  if (!options.tracePath.empty() && options.traceSteps.first > options.steps &&
      options.steps > 0)
    return makeError(llvm::formatv("--trace-steps {0}-{1}: the run has only "
                                   "{2} steps (--steps)",
                                   options.traceSteps.first,
                                   options.traceSteps.last, options.steps));
  if (options.resume && !options.initFrom.empty())
    return makeError("--init-from and --resume exclude each other: a resumed "
                     "run continues from its checkpoint's weights");
  return options;
}

Session::Session(Runtime &rt, const ModelConfig &model,
                 StagePartition partition, SessionOptions options)
    : rt(rt), model(model), partition(std::move(partition)),
      opts(std::move(options)) {
  exitOnError(this->partition.validate(model.numLayers));
  if (this->partition.numStages() != rt.numStages())
    fatal(llvm::formatv("the stage partition has {0} stages, the job {1}",
                        this->partition.numStages(), rt.numStages()));
  if (opts.dataPath.empty())
    fatal("no training data (--data FILE, a token file from "
          "ratrain-tokenize)");
  TokenFile tokens = exitOnError(TokenFile::open(opts.dataPath));
  // A format without a vocabulary (Megatron, flat arrays): the loader checks
  // every id it reads.
  if (int64_t(tokens.vocab()) > model.vocab)
    fatal(llvm::formatv("{0}: token vocabulary {1} exceeds the model's "
                        "vocab_size {2}",
                        opts.dataPath, tokens.vocab(), model.vocab));
  DataLoader::Options data{opts.seqLen, opts.microBatch,
                           rt.dpSize(), rt.dpIndex(),
                           opts.seed,   uint32_t(model.vocab)};
  if (!opts.replicaMicroBatches.empty()) {
    if (int64_t(opts.replicaMicroBatches.size()) != int64_t(rt.dpSize()))
      fatal(llvm::formatv("the program has {0} replica shares, the job dp "
                          "= {1}",
                          opts.replicaMicroBatches.size(), rt.dpSize()));
    for (int64_t m : opts.replicaMicroBatches)
      if (m < 1 || m > opts.microBatches)
        fatal(llvm::formatv("a replica share of {0} micro-batches is not in "
                            "[1, {1}]",
                            m, opts.microBatches));
    data.replicaMicroBatches = opts.replicaMicroBatches;
  }
  if (opts.evalSplit > 0) {
    // The last windows of the training data, held out of training.
    uint64_t windows =
        tokens.size() == 0 ? 0 : (tokens.size() - 1) / uint64_t(opts.seqLen);
    uint64_t held = uint64_t(std::ceil(opts.evalSplit * double(windows)));
    uint64_t needed = uint64_t(rt.dpSize()) * uint64_t(opts.microBatch);
    held = std::max(held, needed);
    if (held >= windows)
      fatal(llvm::formatv("{0}: --eval-split {1} would hold out {2} of its "
                          "{3} windows of {4}+1 tokens, leaving none to "
                          "train on",
                          opts.dataPath, opts.evalSplit, held, windows,
                          opts.seqLen));
    DataLoader::Options eval = data;
    eval.firstWindow = windows - held;
    eval.windowCount = held;
    evalLoader.emplace(exitOnError(
        DataLoader::create(exitOnError(TokenFile::open(opts.dataPath)), eval)));
    data.windowCount = windows - held;
  } else if (!opts.evalDataPath.empty()) {
    TokenFile evalTokens = exitOnError(TokenFile::open(opts.evalDataPath));
    if (int64_t(evalTokens.vocab()) > model.vocab)
      fatal(llvm::formatv("{0}: token vocabulary {1} exceeds the model's "
                          "vocab_size {2}",
                          opts.evalDataPath, evalTokens.vocab(), model.vocab));
    evalLoader.emplace(
        exitOnError(DataLoader::create(std::move(evalTokens), data)));
  }
  loader.emplace(exitOnError(DataLoader::create(std::move(tokens), data)));
  if (rt.rank() == 0)
    logger.emplace(exitOnError(StepLogger::create(opts.logPath)));
  if (!opts.tracePath.empty()) {
    // Refuse an unwritable path now, not after the traced steps ran.
    if (rt.rank() == 0)
      exitOnError(AtomicFile::create(opts.tracePath).takeError());
    rt.tracer().setRange(opts.traceSteps);
  }
}

uint64_t Session::start() {
  started = true;
  if (!opts.initFrom.empty()) {
    // The prologue's offloads are done before the copies are written.
    rt.waitOffloadedStates();
    exitOnError(rt.loadPretrained(opts.initFrom, model, slots));
    // States kept in the storage tier: the loaded copies into their files.
    rt.unstageOffloadedStates();
    return 1;
  }
  if (!opts.resume)
    return 1;
  rt.waitOffloadedStates();
  TrainerState state =
      exitOnError(rt.loadCheckpoint(opts.checkpointDir, model, slots));
  rt.unstageOffloadedStates();
  if (state.seed != opts.seed)
    fatal(llvm::formatv("the checkpoint's data seed is {0}, --seed is {1}: "
                        "resuming would not repeat the data order",
                        state.seed, opts.seed));
  currentStep = state.step;
  position = state.data;
  return currentStep + 1;
}

bool Session::beginStep() {
  if (!started)
    fatal("Session::beginStep before Session::start");
  // Validation after the training step that ends an interval.
  if (evalPending) {
    inEval = true;
    lossSum = 0;
    lossCount = 0;
    return true;
  }
  inEval = false;
  if (currentStep >= opts.steps) {
    finishTrace();
    return false;
  }
  ++currentStep;
  lossSum = 0;
  lossCount = 0;
  stepGradNorm = NAN;
  stepStart = std::chrono::steady_clock::now();
  rt.tracer().beginStep(currentStep);
  return true;
}

void Session::finishTrace() {
  if (opts.tracePath.empty() || traceWritten)
    return;
  traceWritten = true;
  rt.writeTrace(opts.tracePath, model.name);
  if (logger)
    logger->note(llvm::formatv("wrote the trace of steps {0}-{1} to {2}",
                               opts.traceSteps.first,
                               std::min(opts.traceSteps.last, currentStep),
                               opts.tracePath)
                     .str());
}

int64_t Session::replicaMicroBatches() const {
  return opts.replicaMicroBatches.empty()
             ? opts.microBatches
             : opts.replicaMicroBatches[size_t(rt.dpIndex())];
}

int64_t Session::totalMicroBatches() const {
  if (opts.replicaMicroBatches.empty())
    return opts.microBatches * rt.dpSize();
  int64_t total = 0;
  for (int64_t m : opts.replicaMicroBatches)
    total += m;
  return total;
}

void Session::loadBatch(BatchField field, Buffer dest, int64_t microBatch) {
  if (microBatch < 0 || microBatch >= replicaMicroBatches())
    fatal(llvm::formatv("load_batch: micro-batch {0} is not in [0, {1}) "
                        "(the micro-batches of this replica)",
                        microBatch, replicaMicroBatches()));
  if (inEval) {
    DataPosition at;
    at.samples = evalDone * evalLoader->samplesPerStep(opts.microBatches);
    evalLoader->fill(at, microBatch, field, dest);
    return;
  }
  loader->fill(position, microBatch, field, dest);
}

void Session::reportLoss(Buffer loss, int64_t microBatch) {
  if (loss.bytes < 4)
    fatal(llvm::formatv("report_loss of micro-batch {0}: the loss buffer "
                        "holds {1} bytes, not an f32",
                        microBatch, loss.bytes));
  lossSum += double(loss.as<float>()[0]);
  ++lossCount;
}

double Session::learningRate(double compiled) {
  if (std::isnan(compiledLr)) {
    compiledLr = compiled;
    // The compiled rate is the peak only now known: check it once.
    if (llvm::Error error = opts.schedule(compiled).validate())
      fatal(llvm::toString(std::move(error)));
  }
  return opts.schedule(compiled).at(currentStep);
}

void Session::saveInitialCheckpoint() {
  if (opts.steps != 0 || opts.checkpointDir.empty())
    return;
  save();
}

void Session::endStep() {
  if (inEval) {
    endEvalStep();
    return;
  }
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - stepStart)
                       .count();
  rt.tracer().endStep();
  position.samples += loader->samplesPerStep(opts.microBatches);
  double loss = lossCount ? lossSum / double(lossCount) : NAN;
  // Logged is the mean of the last-stage ranks' means: with uneven shares
  // each is weighted by its share, so that the mean is over the global
  // batch.
  if (!opts.replicaMicroBatches.empty() && lossCount)
    loss *=
        double(lossCount) * double(rt.dpSize()) / double(totalMicroBatches());
  double tokens = double(totalMicroBatches() * opts.microBatch * opts.seqLen);
  // Kernel and wait seconds of this step, measured by the emitted helpers.
  StepTimeSplit times;
  times.step = seconds;
  rt.stepTimers().take(times);
  times.progressCpu = rt.takeProgressCpuSeconds();
  double lr =
      std::isnan(compiledLr) ? NAN : opts.schedule(compiledLr).at(currentStep);
  lastStepLoss =
      rt.logStep(logger ? &*logger : nullptr, currentStep, opts.steps, loss,
                 tokens, seconds, &times, lr, stepGradNorm);
  bool due = !opts.checkpointDir.empty() &&
             ((opts.saveEvery && currentStep % opts.saveEvery == 0) ||
              currentStep == opts.steps);
  if (due)
    save();
  evalPending = evalDue(currentStep);
  if (currentStep == opts.traceSteps.last)
    finishTrace();
}

void Session::endEvalStep() {
  // The step's kernel and wait times are not a training step's.
  StepTimeSplit discarded;
  rt.stepTimers().take(discarded);
  rt.takeProgressCpuSeconds();
  evalLossSum += lossSum;
  evalLossCount += lossCount;
  if (++evalDone < opts.evalSteps)
    return;
  // As a training step's loss (Runtime::logStep): each last-stage rank's
  // mean over its micro-batches, then the mean over those ranks.
  double mine =
      evalLossCount ? evalLossSum / double(evalLossCount) : double(NAN);
  if (!opts.replicaMicroBatches.empty() && evalLossCount)
    mine *= double(evalLossCount) * double(rt.dpSize()) /
            double(totalMicroBatches() * int64_t(opts.evalSteps));
  lastEvalLoss = meanReportedLoss(
      rt.allGatherDoubleTuples(llvm::ArrayRef<double>(&mine, 1)));
  double tokens = double(opts.evalSteps * totalMicroBatches() *
                         opts.microBatch * opts.seqLen);
  if (logger)
    logger->logEval(currentStep, lastEvalLoss, tokens);
  evalDone = 0;
  evalLossSum = 0;
  evalLossCount = 0;
  evalPending = false;
  inEval = false;
}

void Session::save() {
  // States kept in the storage tier: their files into the copies saved.
  rt.stageOffloadedStates();
  TrainerState state;
  state.step = currentStep;
  state.data = position;
  state.seed = opts.seed;
  state.pp = rt.numStages();
  state.dp = rt.dpSize();
  exitOnError(
      rt.saveCheckpoint(opts.checkpointDir, model, partition, state, slots));
  if (logger)
    logger->note(llvm::formatv("saved checkpoint of step {0} under {1}",
                               currentStep, opts.checkpointDir)
                     .str());
}
