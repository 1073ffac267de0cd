//===- Simulator.cpp - Simulation entry point and report ------------------===//
//
// sim::simulate runs the engine (Engine.h) and turns its state into a
// SimReport; the report's printing.
//
//===----------------------------------------------------------------------===//

#include "Engine.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstdio>

using namespace ratrain;
using namespace ratrain::sim;
using namespace ratrain::sim::detail;

//===----------------------------------------------------------------------===//
// Report
//===----------------------------------------------------------------------===//

SimReport Engine::makeReport() const {
  SimReport report;
  report.programName = program.name;
  report.machineName = machine.name;
  report.iterations = options.iterations;
  report.stages = static_cast<int64_t>(program.stages.size());
  report.clusters = program.totalClusters();
  report.tasksPerIteration = program.totalTasks();
  report.events = processed;
  report.dmaChannels =
      static_cast<uint32_t>(std::max<int64_t>(1, machine.cluster.dmaChannels));
  const unsigned n = options.iterations;
  report.iterationEnd.assign(n, 0);
  for (const StageState &st : stages)
    for (unsigned i = 0; i < n; ++i)
      report.iterationEnd[i] =
          std::max({report.iterationEnd[i], st.stats[i].streamEnd,
                    st.stats[i].lastAsyncDone});
  report.firstIterationTime = report.iterationEnd[0];
  report.stepTime =
      n >= 2 ? (report.iterationEnd[n - 1] - report.iterationEnd[0]) /
                   static_cast<double>(n - 1)
             : report.iterationEnd[0];
  const unsigned firstMeasured = n >= 2 ? 1 : 0;
  const double measured = static_cast<double>(n - firstMeasured);

  report.tokensPerIteration = program.tokensPerIteration;
  report.modelFlopsPerIteration = program.modelFlopsPerIteration;
  if (report.stepTime > 0) {
    report.tokensPerSecond = program.tokensPerIteration / report.stepTime;
    double peak =
        machine.cluster.peakFlopsF16 * static_cast<double>(report.clusters);
    if (peak > 0)
      report.mfu = program.modelFlopsPerIteration / (report.stepTime * peak);
  }

  for (uint32_t s = 0; s < stages.size(); ++s) {
    const StageState &st = stages[s];
    const StageProgram &sp = program.stages[s];
    StageReport stage;
    stage.name =
        sp.name.empty() ? llvm::formatv("stage {0}", s).str() : sp.name;
    for (unsigned i = firstMeasured; i < n; ++i) {
      for (unsigned k = 0; k < kNumComputeKinds; ++k)
        stage.busy[k] += st.stats[i].busy[k] / measured;
      for (unsigned k = 0; k < kNumCommKinds; ++k)
        stage.exposed[k] += st.stats[i].exposed[k] / measured;
      stage.progressCpu += st.stats[i].progressCpu / measured;
      stage.coreCopy += st.stats[i].coreCopy / measured;
    }
    for (unsigned i = 0; i < n; ++i)
      stage.iterationEnd.push_back(
          std::max(st.stats[i].streamEnd, st.stats[i].lastAsyncDone));
    if (report.stepTime > 0) {
      stage.idleFraction = std::max(
          0.0, 1.0 - (stage.totalBusy() + stage.coreCopy) / report.stepTime);
      stage.bubbleFraction = std::max(
          0.0, stage.idleFraction - stage.totalExposed() / report.stepTime);
    }
    stage.peakDdrBytes = sp.residentBytes + std::max<int64_t>(0, st.peakMemory);
    stage.assignedPeakBytes = sp.assignedPeakBytes;
    stage.exceedsDdr = machine.cluster.ddrBytes > 0 &&
                       std::max(stage.peakDdrBytes, stage.assignedPeakBytes) >
                           machine.cluster.ddrBytes;
    report.meanBubbleFraction += stage.bubbleFraction;
    report.maxBubbleFraction =
        std::max(report.maxBubbleFraction, stage.bubbleFraction);
    for (unsigned k = 0; k < kNumCommKinds; ++k) {
      report.maxExposed[k] = std::max(report.maxExposed[k], stage.exposed[k]);
      report.meanExposed[k] += stage.exposed[k];
    }
    report.maxPeakDdrBytes = std::max(
        {report.maxPeakDdrBytes, stage.peakDdrBytes, stage.assignedPeakBytes});
    report.stageReports.push_back(std::move(stage));
  }
  const double numStages = static_cast<double>(stages.size());
  report.meanBubbleFraction /= numStages;
  for (unsigned k = 0; k < kNumCommKinds; ++k)
    report.meanExposed[k] /= numStages;
  report.trace = trace;
  return report;
}

double StageReport::totalBusy() const {
  double total = 0;
  for (double seconds : busy)
    total += seconds;
  return total;
}

double StageReport::totalExposed() const {
  double total = 0;
  for (double seconds : exposed)
    total += seconds;
  return total;
}

llvm::Expected<SimReport> sim::simulate(const SimProgram &program,
                                        const MachineModel &machine,
                                        const SimOptions &options) {
  Engine engine(program, machine, options);
  if (llvm::Error error = engine.run())
    return std::move(error);
  return engine.makeReport();
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

std::string sim::formatNumber(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.6g", value);
  return buffer;
}

static std::string gib(int64_t bytes) {
  return llvm::formatv("{0:f3}",
                       static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0))
      .str();
}

void SimReport::print(llvm::raw_ostream &os) const {
  auto g = [](double value) { return formatNumber(value); };
  os << "program: " << programName << "\n";
  os << "machine: " << machineName << "\n";
  os << "stages: " << stages << "\n";
  os << "clusters: " << clusters << "\n";
  os << "tasks-per-iteration: " << tasksPerIteration << "\n";
  os << "iterations: " << iterations << "\n";
  os << "events: " << events << "\n";
  os << "first-iteration-s: " << g(firstIterationTime) << "\n";
  os << "step-time-s: " << g(stepTime) << "\n";
  os << "tokens-per-iteration: " << g(tokensPerIteration) << "\n";
  os << "tokens-per-s: " << llvm::formatv("{0:f2}", tokensPerSecond) << "\n";
  os << "mfu-percent: " << llvm::formatv("{0:f2}", mfu * 100) << "\n";
  os << "bubble-mean-percent: "
     << llvm::formatv("{0:f2}", meanBubbleFraction * 100) << "\n";
  os << "bubble-max-percent: "
     << llvm::formatv("{0:f2}", maxBubbleFraction * 100) << "\n";
  for (unsigned k = 0; k < kNumCommKinds; ++k)
    os << "exposed-" << stringifyCommKind(static_cast<CommKind>(k))
       << "-s: " << g(maxExposed[k]) << "\n";
  os << "peak-ddr-max-gib: " << gib(maxPeakDdrBytes) << "\n";
  for (size_t s = 0; s < stageReports.size(); ++s) {
    const StageReport &r = stageReports[s];
    os << "stage " << s << ": name='" << r.name
       << "' busy-s=" << g(r.totalBusy())
       << " bubble-percent=" << llvm::formatv("{0:f2}", r.bubbleFraction * 100)
       << " exposed-comm-s=" << g(r.totalExposed());
    if (r.coreCopy > 0)
      os << " core-copy-s=" << g(r.coreCopy);
    os << " peak-ddr-gib=" << gib(r.peakDdrBytes);
    if (r.assignedPeakBytes > 0)
      os << " assigned-ddr-gib=" << gib(r.assignedPeakBytes);
    if (r.exceedsDdr)
      os << " EXCEEDS-DDR";
    os << "\n";
  }
}
