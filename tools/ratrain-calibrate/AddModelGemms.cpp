//===- AddModelGemms.cpp - Time a model's GEMM calls into a machine file --===//
//
// ratrain-calibrate --add-gemms FILE --model config.json [-o OUT]: the GEMM
// calls of the model (GemmCalls.h) that FILE's gemm_measured does not list
// yet, timed on this host as the full calibration times them
// (measureGemmShapes), added to the file. The driver runs it on the first
// use of a model with `--machine host`, so the planner and the simulator
// price that model's own calls as this host runs them.
//
//===----------------------------------------------------------------------===//

#include "HalideKernelFigures.h"
#include "ModelGemms.h"

#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Model/Limits.h"
#include "ratrain/kernels/Kernels.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <ctime>

using namespace ratrain;
using namespace ratrain::calibrate;

int ratrain::calibrate::addModelGemms(
    llvm::StringRef machinePath, llvm::StringRef outputPath,
    llvm::ArrayRef<GemmCall> calls, int64_t stepWorkingSet,
    llvm::StringRef models, int reps,
    llvm::function_ref<int(const llvm::Twine &)> fail) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(machinePath, /*IsText=*/true);
  if (!buffer)
    return fail(machinePath + ": " + buffer.getError().message());
  llvm::StringRef text = (*buffer)->getBuffer();
  llvm::Expected<MachineModel> parsed = parseMachineModel(text, machinePath);
  if (!parsed)
    return fail(llvm::toString(parsed.takeError()));
  MachineModel machine = std::move(*parsed);
  if (!machine.classes.empty())
    return fail(machinePath +
                ": a machine with classes of clusters; --add-gemms measures "
                "this host, whose clusters are all alike");
  MeasuredGemms &measured = machine.cluster.gemmMeasured;

  // The calls either list lacks (both types are timed together).
  std::vector<GemmShape> shapes;
  for (const GemmCall &call : unmeasuredGemmCalls(calls, measured))
    shapes.push_back({call.form, call.m, call.n, call.k});
  if (shapes.empty()) {
    llvm::errs() << llvm::formatv("{0}: every GEMM call of {1} is measured "
                                  "already\n",
                                  machinePath, models);
    return 0;
  }
  for (const std::vector<MeasuredGemm> *list : {&measured.f32, &measured.f16})
    if (list->size() + shapes.size() > size_t(limits::kMaxMeasuredGemms))
      return fail(llvm::formatv(
          "{0}: {1} more GEMM calls would list more than the limit of {2} "
          "per type (gemm_measured has {3})",
          machinePath, shapes.size(), limits::kMaxMeasuredGemms, list->size()));

  // One cluster's cores, operands cycled through the model's step (at
  // least the node's last-level cache: the clusters' GSM shares together),
  // as the calibration does.
  const int64_t cores = std::max<int64_t>(1, machine.cluster.cores);
  kernels::setNumThreads(int(cores));
  const int64_t cache = std::max<int64_t>(
      machine.cluster.gsmBytes * machine.clustersPerNode, int64_t(16) << 20);
  const int64_t workingSet = modelGemmWorkingSet(stepWorkingSet, cache);
  std::vector<double> f32, bf16;
  measureGemmShapes(reps, workingSet, shapes, f32, bf16);
  int64_t added = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const GemmShape &g = shapes[i];
    for (auto [seconds, list] :
         {std::pair<double, std::vector<MeasuredGemm> *>{f32[i], &measured.f32},
          {bf16[i], &measured.f16}}) {
      if (seconds <= 0 ||
          measured.find(list == &measured.f16, g.form, g.m, g.n, g.k))
        continue;
      list->push_back({g.form, g.m, g.n, g.k, seconds / double(cores)});
      ++added;
    }
  }
  if (added == 0)
    return fail(llvm::formatv("the GEMM kernels failed on every one of the "
                              "{0} calls of {1}",
                              shapes.size(), models));

  // The file's header comments kept, one line more, then the model.
  std::string body = printMachineModel(machine);
  if (llvm::Expected<MachineModel> back = parseMachineModel(body, "output");
      !back)
    return fail("the machine file does not parse back: " +
                llvm::toString(back.takeError()));
  std::string header;
  for (llvm::StringRef rest = text; !rest.empty();) {
    auto [line, tail] = rest.split('\n');
    if (!line.starts_with("#"))
      break;
    header += line.str() + "\n";
    rest = tail;
  }
  char date[64];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  header += llvm::formatv("#  [M] gemm_measured: {0} GEMM calls of {1} added "
                          "on {2} (ratrain-calibrate --add-gemms)\n",
                          shapes.size(), models, date)
                .str();
  if (llvm::Error error =
          llvm::writeToOutput(outputPath, [&](llvm::raw_ostream &out) {
            out << header << body;
            return llvm::Error::success();
          }))
    return fail(outputPath + ": " + llvm::toString(std::move(error)));
  llvm::errs() << llvm::formatv("measured {0} GEMM calls of {1} into {2}\n",
                                shapes.size(), models, outputPath);
  return 0;
}
