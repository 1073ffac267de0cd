//===- SimProgram.cpp - Stage programs and their verification -------------===//

#include "ratrain/Simulator/SimProgram.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

#include <cmath>
#include <map>
#include <tuple>

using namespace ratrain;
using namespace ratrain::sim;

llvm::StringRef sim::stringifyComputeKind(ComputeKind kind) {
  switch (kind) {
  case ComputeKind::Forward:
    return "forward";
  case ComputeKind::Backward:
    return "backward";
  case ComputeKind::Recompute:
    return "recompute";
  case ComputeKind::Update:
    return "update";
  case ComputeKind::ViewCast:
    return "view-cast";
  case ComputeKind::Other:
    return "other";
  }
  return "other";
}

llvm::StringRef sim::stringifyCommKind(CommKind kind) {
  switch (kind) {
  case CommKind::Dma:
    return "dma";
  case CommKind::P2P:
    return "p2p";
  case CommKind::AllReduce:
    return "all-reduce";
  case CommKind::ReduceScatter:
    return "reduce-scatter";
  case CommKind::AllGather:
    return "all-gather";
  case CommKind::Offload:
    return "offload";
  }
  return "dma";
}

CommKind sim::getCommKind(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return CommKind::AllReduce;
  case CollectiveKind::ReduceScatter:
    return CommKind::ReduceScatter;
  case CollectiveKind::AllGather:
    return CommKind::AllGather;
  }
  return CommKind::AllReduce;
}

llvm::StringRef sim::stringifyAlgorithm(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
  case CollectiveAlgorithm::Ring:
    return "ring";
  case CollectiveAlgorithm::Tree:
    return "tree";
  case CollectiveAlgorithm::Hierarchical:
    return "hierarchical";
  }
  return "ring";
}

llvm::StringRef sim::stringifyTaskKind(TaskKind kind) {
  switch (kind) {
  case TaskKind::Compute:
    return "compute";
  case TaskKind::Dma:
    return "dma";
  case TaskKind::Send:
    return "send";
  case TaskKind::Recv:
    return "recv";
  case TaskKind::Collective:
    return "collective";
  case TaskKind::Wait:
    return "wait";
  case TaskKind::Alloc:
    return "alloc";
  case TaskKind::Free:
    return "free";
  case TaskKind::Offload:
    return "offload";
  }
  return "compute";
}

//===----------------------------------------------------------------------===//
// StageProgram
//===----------------------------------------------------------------------===//

static bool isAsync(TaskKind kind) {
  return kind == TaskKind::Dma || kind == TaskKind::Send ||
         kind == TaskKind::Collective || kind == TaskKind::Offload;
}

Token StageProgram::add(const Task &task, llvm::StringRef label) {
  Token token;
  if (isAsync(task.kind))
    token.task = static_cast<uint32_t>(tasks.size());
  tasks.push_back(task);
  labels.emplace_back(label.str());
  return token;
}

void StageProgram::addCompute(ComputeKind kind, double seconds, double flops,
                              llvm::StringRef label, bool optimizerStream) {
  Task task;
  task.kind = TaskKind::Compute;
  task.computeKind = kind;
  task.optimizerStream = optimizerStream;
  task.seconds = seconds;
  task.flops = flops;
  add(task, label);
}

void StageProgram::scaleCompute(double factor) {
  for (Task &task : tasks)
    if (task.kind == TaskKind::Compute)
      task.seconds *= factor;
}

double StageProgram::computeSeconds() const {
  double sum = 0;
  for (const Task &task : tasks)
    if (task.kind == TaskKind::Compute)
      sum += std::max(0.0, task.seconds);
  return sum;
}

Token StageProgram::addDma(int64_t bytes, uint32_t channel,
                           llvm::StringRef label) {
  Task task;
  task.kind = TaskKind::Dma;
  task.bytes = bytes;
  task.channel = channel;
  return add(task, label);
}

Token StageProgram::addSend(uint32_t toStage, int64_t bytes, uint64_t tag,
                            LinkClass link, llvm::StringRef label,
                            bool rendezvous) {
  Task task;
  task.kind = TaskKind::Send;
  task.rendezvous = rendezvous;
  task.peer = toStage;
  task.bytes = bytes;
  task.tag = tag;
  task.link = link;
  return add(task, label);
}

void StageProgram::addRecv(uint32_t fromStage, int64_t bytes, uint64_t tag,
                           llvm::StringRef label) {
  Task task;
  task.kind = TaskKind::Recv;
  task.peer = fromStage;
  task.bytes = bytes;
  task.tag = tag;
  add(task, label);
}

Token StageProgram::addCollective(const CollectiveSpec &spec,
                                  llvm::StringRef label, uint32_t stream,
                                  uint32_t period, uint32_t phase) {
  assert(period >= 1 && phase < period && "a phase of the period");
  Task task;
  task.kind = TaskKind::Collective;
  task.period = period;
  task.phase = phase;
  task.channel = stream;
  task.collective = spec;
  task.bytes = spec.bytes;
  return add(task, label);
}

void StageProgram::addWait(Token token, bool previousIteration,
                           llvm::StringRef label) {
  Task task;
  task.kind = TaskKind::Wait;
  task.waitTask = token.task;
  task.previousIteration = previousIteration;
  add(task, label);
}

Token StageProgram::addOffloadTransfer(int64_t bytes, llvm::StringRef label) {
  Task task;
  task.kind = TaskKind::Offload;
  task.bytes = bytes;
  return add(task, label);
}

void StageProgram::addAlloc(int64_t bytes, llvm::StringRef label) {
  Task task;
  task.kind = TaskKind::Alloc;
  task.bytes = bytes;
  add(task, label);
}

void StageProgram::addFree(int64_t bytes, llvm::StringRef label) {
  Task task;
  task.kind = TaskKind::Free;
  task.bytes = bytes;
  add(task, label);
}

void StageProgram::setWaitTarget(size_t index, Token token,
                                 bool previousIteration) {
  tasks[index].waitTask = token.task;
  tasks[index].previousIteration = previousIteration;
}

std::string StageProgram::describeTask(size_t index) const {
  if (index >= tasks.size())
    return llvm::formatv("task {0} (out of range)", index).str();
  std::string text = llvm::formatv("task {0} ({1}", index,
                                   stringifyTaskKind(tasks[index].kind))
                         .str();
  if (!labels[index].empty())
    text += " '" + labels[index] + "'";
  return text + ")";
}

uint32_t SimProgram::longestPeriod() const {
  uint32_t longest = 1;
  for (const StageProgram &stage : stages)
    for (size_t i = 0; i < stage.size(); ++i)
      longest = std::max(longest, stage.getTask(i).period);
  return longest;
}

size_t SimProgram::totalTasks() const {
  size_t total = 0;
  for (const StageProgram &stage : stages)
    total += stage.size();
  return total;
}

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

static llvm::Error taskError(const SimProgram &program, size_t stage,
                             size_t task, const llvm::Twine &what) {
  const StageProgram &sp = program.stages[stage];
  std::string name = sp.name.empty() ? "" : " '" + sp.name + "'";
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 llvm::formatv("stage {0}{1}, {2}: {3}", stage,
                                               name, sp.describeTask(task),
                                               what.str())
                                     .str());
}

llvm::Error SimProgram::verify() const {
  if (stages.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "program has no stages");
  if (dataParallel < 1 || clustersPerStage < 1)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "dataParallel and clustersPerStage must be at least 1");
  const size_t numStages = stages.size();
  // Sends by (source, destination, tag) -> task index.
  using Key = std::tuple<uint32_t, uint32_t, uint64_t>;
  std::map<Key, uint32_t> sends;
  for (size_t s = 0; s < numStages; ++s) {
    const StageProgram &sp = stages[s];
    if (sp.size() >= Token::kInvalid)
      return taskError(*this, s, 0, "too many tasks in one stage");
    for (size_t i = 0, e = sp.size(); i < e; ++i) {
      const Task &t = sp.getTask(i);
      switch (t.kind) {
      case TaskKind::Compute:
        if (!(t.seconds >= 0) || !std::isfinite(t.seconds))
          return taskError(*this, s, i,
                           "compute duration must be finite "
                           "and non-negative");
        break;
      case TaskKind::Dma:
      case TaskKind::Alloc:
      case TaskKind::Free:
      case TaskKind::Offload:
        if (t.bytes < 0)
          return taskError(*this, s, i, "negative byte count");
        break;
      case TaskKind::Send: {
        if (t.bytes < 0)
          return taskError(*this, s, i, "negative byte count");
        if (t.peer >= numStages || t.peer == s)
          return taskError(*this, s, i,
                           llvm::formatv("send to invalid stage {0}", t.peer));
        auto [it, inserted] =
            sends.emplace(Key(s, t.peer, t.tag), static_cast<uint32_t>(i));
        if (!inserted)
          return taskError(
              *this, s, i,
              llvm::formatv("second send to stage {0} with tag {1} (first: "
                            "{2})",
                            t.peer, t.tag, sp.describeTask(it->second)));
        break;
      }
      case TaskKind::Recv:
        if (t.peer >= numStages || t.peer == s)
          return taskError(
              *this, s, i,
              llvm::formatv("recv from invalid stage {0}", t.peer));
        break;
      case TaskKind::Collective: {
        const CollectiveSpec &c = t.collective;
        if (c.bytes < 0)
          return taskError(*this, s, i, "negative byte count");
        if (c.groupSize < 1 || c.membersPerNode < 1 ||
            c.membersPerNode > c.groupSize ||
            c.groupSize % c.membersPerNode != 0)
          return taskError(
              *this, s, i,
              llvm::formatv("invalid collective group: size {0}, {1} "
                            "members per node (must divide the size)",
                            c.groupSize, c.membersPerNode));
        if (c.hasLevels()) {
          int64_t product = 1;
          for (int64_t m : c.membersPerLevel) {
            if (m < 0 || m > c.groupSize)
              product = -1;
            if (product > 0)
              product *= std::max<int64_t>(1, m);
          }
          if (product != c.groupSize)
            return taskError(
                *this, s, i,
                llvm::formatv("invalid collective group: size {0}, members "
                              "per level {1} x {2} x {3} x {4} (their product "
                              "must be the size)",
                              c.groupSize, c.membersPerLevel[0],
                              c.membersPerLevel[1], c.membersPerLevel[2],
                              c.membersPerLevel[3]));
        }
        break;
      }
      case TaskKind::Wait: {
        if (t.waitTask >= sp.size())
          return taskError(*this, s, i, "wait on an unknown token");
        if (!t.previousIteration && t.waitTask >= i)
          return taskError(*this, s, i,
                           "wait on a task that is issued later in the "
                           "iteration (mark it previousIteration for a "
                           "loop-carried wait)");
        TaskKind awaited = sp.getTask(t.waitTask).kind;
        if (!isAsync(awaited))
          return taskError(*this, s, i,
                           "wait on " + sp.describeTask(t.waitTask) +
                               ", which is not asynchronous");
        break;
      }
      }
    }
  }
  // Every recv needs exactly one matching send; every send a matching recv.
  std::map<Key, uint32_t> recvs;
  for (size_t s = 0; s < numStages; ++s) {
    const StageProgram &sp = stages[s];
    for (size_t i = 0, e = sp.size(); i < e; ++i) {
      const Task &t = sp.getTask(i);
      if (t.kind != TaskKind::Recv)
        continue;
      Key key(t.peer, s, t.tag);
      auto it = sends.find(key);
      if (it == sends.end())
        return taskError(
            *this, s, i,
            llvm::formatv("recv from stage {0} with tag {1} has no matching "
                          "send: the program would deadlock",
                          t.peer, t.tag));
      const Task &send = stages[t.peer].getTask(it->second);
      if (send.bytes != t.bytes)
        return taskError(
            *this, s, i,
            llvm::formatv("recv of {0} bytes, but the matching send in stage "
                          "{1} ({2}) sends {3}",
                          t.bytes, t.peer,
                          stages[t.peer].describeTask(it->second), send.bytes));
      if (!recvs.emplace(key, static_cast<uint32_t>(i)).second)
        return taskError(
            *this, s, i,
            llvm::formatv("second recv from stage {0} with tag {1}", t.peer,
                          t.tag));
    }
  }
  for (const auto &[key, index] : sends)
    if (!recvs.count(key))
      return taskError(
          *this, std::get<0>(key), index,
          llvm::formatv("send to stage {0} with tag {1} is never received",
                        std::get<1>(key), std::get<2>(key)));
  return llvm::Error::success();
}
