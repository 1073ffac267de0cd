//===- Trace.cpp - Per-op trace of a training run
//---------------------------===//

#include "ratrain/runtime/Trace.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace ratrain::rt;

llvm::StringRef ratrain::rt::stringifyTracePhase(TracePhase phase) {
  switch (phase) {
  case TracePhase::Forward:
    return "forward";
  case TracePhase::Backward:
    return "backward";
  case TracePhase::Recompute:
    return "recompute";
  case TracePhase::Update:
    return "update";
  case TracePhase::ViewCast:
    return "view-cast";
  case TracePhase::Other:
    return "other";
  }
  return "other";
}

llvm::StringRef ratrain::rt::getCommCategory(llvm::StringRef what) {
  llvm::StringRef word = what.take_until([](char c) { return c == ' '; });
  return llvm::StringSwitch<llvm::StringRef>(word)
      .Case("dma", "dma")
      .Case("send", "p2p")
      .Case("recv", "p2p")
      .Case("all-reduce", "all-reduce")
      .Case("reduce-scatter", "reduce-scatter")
      .Case("all-gather", "all-gather")
      .Case("offload", "offload")
      .Case("reload", "offload")
      .Case("broadcast", "broadcast")
      .Case("barrier", "barrier")
      .Default("other");
}

llvm::Expected<TraceRange> ratrain::rt::parseTraceRange(llvm::StringRef text) {
  auto bad = [&] {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("--trace-steps: '{0}' is not a step N or a range "
                      "FIRST-LAST of steps (1-based, FIRST <= LAST)",
                      text));
  };
  auto [firstText, lastText] = text.split('-');
  TraceRange range;
  if (firstText.getAsInteger(10, range.first) || range.first == 0)
    return bad();
  range.last = range.first;
  if (text.contains('-') &&
      (lastText.getAsInteger(10, range.last) || range.last < range.first))
    return bad();
  return range;
}

void Tracer::beginStep(uint64_t step) {
  active = steps.contains(step);
  if (!active)
    return;
  currentStep = step;
  stepStart = Clock::now();
  if (events.empty())
    firstStart = stepStart;
}

void Tracer::endStep() {
  if (!active)
    return;
  Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(asyncMutex);
  if (openSpan >= 0)
    events[size_t(openSpan)].end = now;
  openSpan = -1;
  Event step{Kind::Step};
  step.step = currentStep;
  step.start = stepStart;
  step.end = now;
  events.push_back(std::move(step));
  active = false;
}

void Tracer::beginSpan(const char *label, TracePhase phase) {
  if (!active)
    return;
  Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(asyncMutex);
  if (openSpan >= 0)
    events[size_t(openSpan)].end = now;
  Event span{Kind::Span, phase, label};
  span.step = currentStep;
  span.start = span.end = now;
  openSpan = int64_t(events.size());
  events.push_back(std::move(span));
}

void Tracer::endSpan() {
  if (!active || openSpan < 0)
    return;
  Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(asyncMutex);
  events[size_t(openSpan)].end = now;
  openSpan = -1;
}

void Tracer::kernel(const char *name, Clock::time_point start,
                    Clock::time_point end, llvm::StringRef shape) {
  if (!active)
    return;
  Event call{Kind::Kernel, TracePhase::Other, name, shape.str()};
  call.step = currentStep;
  call.start = start;
  call.end = end;
  std::lock_guard<std::mutex> lock(asyncMutex);
  events.push_back(std::move(call));
}

void Tracer::wait(llvm::StringRef what, Clock::time_point start,
                  Clock::time_point end) {
  if (!active)
    return;
  Event blocked{Kind::Wait};
  blocked.text = what.str();
  blocked.step = currentStep;
  blocked.start = start;
  blocked.end = end;
  std::lock_guard<std::mutex> lock(asyncMutex);
  events.push_back(std::move(blocked));
}

void Tracer::async(llvm::StringRef what, Clock::time_point issued,
                   Clock::time_point completed) {
  if (!active)
    return;
  Event op{Kind::Async};
  op.text = what.str();
  op.step = currentStep;
  op.start = issued;
  op.end = completed < issued ? issued : completed;
  std::lock_guard<std::mutex> lock(asyncMutex);
  events.push_back(std::move(op));
}

std::string Tracer::takeEvents(int64_t pid, llvm::StringRef processName,
                               int64_t stage, int64_t dataRank,
                               Clock::time_point origin) {
  std::vector<Event> taken;
  {
    std::lock_guard<std::mutex> lock(asyncMutex);
    taken.swap(events);
    openSpan = -1;
  }
  // Microseconds to the nanosecond, printed as such (not as the nearest
  // double's 17 digits).
  auto number = [](llvm::json::OStream &json, llvm::StringRef key,
                   double micros) {
    json.attributeBegin(key);
    json.rawValue(llvm::formatv("{0:f3}", micros).str());
    json.attributeEnd();
  };
  auto micros = [&](Clock::time_point t) {
    return std::chrono::duration<double, std::micro>(t - origin).count();
  };
  std::string text;
  llvm::raw_string_ostream os(text);
  bool first = true;
  auto event = [&](llvm::function_ref<void(llvm::json::OStream &)> body) {
    if (!first)
      os << ",\n";
    first = false;
    llvm::json::OStream json(os);
    json.object([&] { body(json); });
  };
  auto metadata = [&](llvm::StringRef what, std::optional<int64_t> tid,
                      llvm::StringRef name) {
    event([&](llvm::json::OStream &json) {
      json.attribute("name", what);
      json.attribute("ph", "M");
      json.attribute("pid", pid);
      if (tid)
        json.attribute("tid", *tid);
      json.attributeObject("args", [&] {
        json.attribute("name", name);
        if (!tid) {
          json.attribute("stage", stage);
          json.attribute("data_rank", dataRank);
        }
      });
    });
  };
  metadata("process_name", std::nullopt, processName);
  event([&](llvm::json::OStream &json) {
    json.attribute("name", "process_sort_index");
    json.attribute("ph", "M");
    json.attribute("pid", pid);
    json.attributeObject("args", [&] { json.attribute("sort_index", pid); });
  });
  metadata("thread_name", ComputeThread, "compute");
  metadata("thread_name", BlockedThread, "stream blocked (exposed comm)");
  metadata("thread_name", NetworkThread, "network");
  metadata("thread_name", OffloadThread, "offload tier");
  metadata("thread_name", DmaThread, "dma");

  uint64_t asyncId = 0;
  for (const Event &e : taken) {
    if (e.kind == Kind::Async) {
      // Operations in flight overlap: Perfetto's async slices, one track per
      // kind under the rank.
      llvm::StringRef category = getCommCategory(e.text);
      int64_t tid = category == "dma"       ? DmaThread
                    : category == "offload" ? OffloadThread
                                            : NetworkThread;
      std::string id = llvm::formatv("{0}.{1}", pid, asyncId++).str();
      for (bool begin : {true, false})
        event([&](llvm::json::OStream &json) {
          json.attribute("name", e.text);
          json.attribute("cat", category);
          json.attribute("ph", begin ? "b" : "e");
          json.attribute("id", id);
          number(json, "ts", micros(begin ? e.start : e.end));
          json.attribute("pid", pid);
          json.attribute("tid", tid);
          if (begin)
            json.attributeObject(
                "args", [&] { json.attribute("step", int64_t(e.step)); });
        });
      continue;
    }
    event([&](llvm::json::OStream &json) {
      switch (e.kind) {
      case Kind::Step:
        json.attribute("name", llvm::formatv("step {0}", e.step).str());
        json.attribute("cat", "step");
        json.attribute("tid", int64_t(ComputeThread));
        break;
      case Kind::Span:
        json.attribute("name", e.name);
        json.attribute("cat", stringifyTracePhase(e.phase));
        json.attribute("tid", int64_t(ComputeThread));
        break;
      case Kind::Kernel:
        json.attribute("name", e.name);
        json.attribute("cat", "kernel");
        json.attribute("tid", int64_t(ComputeThread));
        break;
      case Kind::Wait: {
        llvm::StringRef category = getCommCategory(e.text);
        json.attribute("name", ("wait " + category).str());
        json.attribute("cat", category);
        json.attribute("tid", int64_t(BlockedThread));
        break;
      }
      case Kind::Async:
        break;
      }
      json.attribute("ph", "X");
      json.attribute("ts", micros(e.start));
      json.attribute(
          "dur",
          std::chrono::duration<double, std::micro>(e.end - e.start).count());
      json.attribute("pid", pid);
      json.attributeObject("args", [&] {
        json.attribute("step", int64_t(e.step));
        if (e.kind == Kind::Wait)
          json.attribute("what", e.text);
        if (e.kind == Kind::Kernel && !e.text.empty())
          json.attribute("shape", e.text);
      });
    });
  }
  return text;
}

std::string Tracer::assemble(llvm::ArrayRef<std::string> rankEvents,
                             llvm::StringRef program) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"program\":";
  llvm::json::OStream(os).value(program);
  os << ",\"source\":\"ratrain runtime\"},\n\"traceEvents\":[\n";
  bool first = true;
  for (const std::string &events : rankEvents) {
    if (events.empty())
      continue;
    if (!first)
      os << ",\n";
    first = false;
    os << events;
  }
  os << "\n]}\n";
  return text;
}
