//===- CSV.cpp - Schedules as torch.distributed.pipelining CSV ------------===//
//
// One row per rank, one action per cell (`0F0,0F1,0I0,0W0,...`), the format
// torch.distributed.pipelining's `_dump_csv` / `_load_csv` and torchtitan's
// `pipeline_parallel_schedule_csv` use.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Schedule/PipelineSchedule.h"

#include "ratrain/Model/Limits.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace ratrain;
using namespace ratrain::schedule;

std::string schedule::writeCSV(const PipelineSchedule &schedule) {
  std::string out;
  for (const std::vector<Action> &program : schedule.programs) {
    for (size_t i = 0; i < program.size(); ++i) {
      if (i)
        out += ',';
      out += program[i].str();
    }
    out += '\n';
  }
  return out;
}

static llvm::Error csvError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "schedule CSV: " + message);
}

llvm::Expected<PipelineSchedule> schedule::readCSV(llvm::StringRef text) {
  PipelineSchedule schedule;
  schedule.kind = ScheduleKind::Custom;
  // Per stage, the row that holds it and where it first appears (line,
  // column), -1 while unseen.
  struct Place {
    int64_t row = -1, line = 0, column = 0;
  };
  std::vector<Place> placeOfStage;
  int64_t maxMicroBatch = -1;
  int64_t lineNumber = 0;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    ++lineNumber;
    line = line.trim();
    if (line.empty() || line.starts_with("#"))
      continue;
    int64_t row = static_cast<int64_t>(schedule.programs.size());
    if (row >= limits::kMaxModelLayers)
      return csvError(llvm::formatv("more than {0} rows (ranks), the limit",
                                    limits::kMaxModelLayers));
    std::vector<Action> &program = schedule.programs.emplace_back();
    llvm::SmallVector<llvm::StringRef, 64> cells;
    line.split(cells, ',');
    for (size_t i = 0; i < cells.size(); ++i) {
      int64_t column = static_cast<int64_t>(i) + 1;
      llvm::StringRef cell = cells[i].trim();
      if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"')
        cell = cell.drop_front().drop_back().trim();
      if (cell.empty())
        continue;
      llvm::Expected<Action> action = Action::parse(cell);
      if (!action)
        return csvError(llvm::formatv("row {0} (line {1}), column {2}: {3}",
                                      row, lineNumber, column,
                                      llvm::toString(action.takeError())));
      if (action->stage >= static_cast<int64_t>(placeOfStage.size()))
        placeOfStage.resize(action->stage + 1);
      Place &place = placeOfStage[action->stage];
      if (place.row < 0) {
        place = {row, lineNumber, column};
      } else if (place.row != row) {
        return csvError(llvm::formatv(
            "row {0} (line {1}), column {2}: '{3}' runs stage {4}, which row "
            "{5} (line {6}, column {7}) runs too: a stage belongs to one rank",
            row, lineNumber, column, cell, action->stage, place.row, place.line,
            place.column));
      }
      maxMicroBatch = std::max(maxMicroBatch, action->microBatch);
      program.push_back(*action);
    }
  }
  int64_t rows = static_cast<int64_t>(schedule.programs.size());
  if (rows == 0)
    return csvError("no rows: the file is empty or holds only comments");
  int64_t stages = static_cast<int64_t>(placeOfStage.size());
  for (int64_t c = 0; c < stages; ++c)
    if (placeOfStage[c].row < 0)
      return csvError(llvm::formatv(
          "stage {0} appears in no row, but stage {1} does: stages are "
          "numbered 0 to pp * v - 1",
          c, stages - 1));
  if (stages == 0 || stages % rows != 0)
    return csvError(llvm::formatv(
        "{0} stages over {1} rows: the number of stages must be a positive "
        "multiple of the number of rows (ranks)",
        stages, rows));
  int64_t v = stages / rows;
  std::vector<int64_t> stagesPerRow(rows, 0);
  for (const Place &place : placeOfStage)
    ++stagesPerRow[place.row];
  for (int64_t r = 0; r < rows; ++r)
    if (stagesPerRow[r] != v)
      return csvError(llvm::formatv(
          "row {0} runs {1} stages, but each of the {2} rows must run v = "
          "{3} ({4} stages in all)",
          r, stagesPerRow[r], rows, v, stages));
  if (llvm::Error err = checkScheduleShape(rows, v, maxMicroBatch + 1))
    return csvError(llvm::toString(std::move(err)));
  schedule.ranks = rows;
  schedule.virtualStages = v;
  schedule.microBatches = maxMicroBatch + 1;
  schedule.stageToRank.resize(stages);
  for (int64_t c = 0; c < stages; ++c)
    schedule.stageToRank[c] = placeOfStage[c].row;
  return schedule;
}
