//===- JSON.cpp - JSON parsing with a bounded nesting depth ---------------===//

#include "ratrain/Model/JSON.h"
#include "ratrain/Model/Limits.h"

#include "llvm/Support/FormatVariadic.h"

using namespace ratrain;

llvm::Error ratrain::checkJSONDepth(llvm::StringRef text) {
  int64_t depth = 0;
  bool inString = false;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i; // the escaped character cannot end the string
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limits::kMaxJSONDepth)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            llvm::formatv("JSON nested deeper than the limit of {0} levels "
                          "(at byte {1})",
                          limits::kMaxJSONDepth, i)
                .str());
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return llvm::Error::success();
}

llvm::Expected<llvm::json::Value> ratrain::parseJSON(llvm::StringRef text) {
  if (llvm::Error error = checkJSONDepth(text))
    return std::move(error);
  return llvm::json::parse(text);
}
