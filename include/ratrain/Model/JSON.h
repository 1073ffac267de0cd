//===- JSON.h - JSON parsing with a bounded nesting depth -------*- C++ -*-===//
//
// LLVM's JSON parser recurses once per nesting level, so a document nested
// 100,000 deep overflows the stack. Every JSON reader of the project (the
// HuggingFace config importer, trainer states, checkpoint indexes,
// safetensors headers, step logs) parses through parseJSON, which first
// scans the text and refuses nesting deeper than limits::kMaxJSONDepth.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MODEL_JSON_H
#define RATRAIN_MODEL_JSON_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace ratrain {

/// Fails when arrays and objects in `text` nest deeper than
/// limits::kMaxJSONDepth (brackets inside strings do not count). The message
/// names the limit and the byte offset; the caller adds the file.
llvm::Error checkJSONDepth(llvm::StringRef text);

/// checkJSONDepth, then llvm::json::parse.
llvm::Expected<llvm::json::Value> parseJSON(llvm::StringRef text);

} // namespace ratrain

#endif // RATRAIN_MODEL_JSON_H
