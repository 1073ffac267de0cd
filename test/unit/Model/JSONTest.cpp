//===- JSONTest.cpp - JSON parsing with a bounded nesting depth -----------===//

#include "ratrain/Model/JSON.h"
#include "ratrain/Model/Limits.h"

#include "gtest/gtest.h"

#include <string>

using namespace ratrain;

namespace {
std::string nested(int64_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

std::string errorText(llvm::Error error) {
  return error ? llvm::toString(std::move(error)) : std::string();
}
} // namespace

TEST(JSON, DepthUpToTheLimitParses) {
  llvm::Expected<llvm::json::Value> value =
      parseJSON(nested(limits::kMaxJSONDepth));
  ASSERT_TRUE(bool(value)) << llvm::toString(value.takeError());
  EXPECT_TRUE(value->getAsArray());
}

TEST(JSON, DeeperThanTheLimitIsRefusedBeforeParsing) {
  // 100,000 levels overflow the stack in llvm::json::parse.
  EXPECT_EQ(errorText(parseJSON(nested(100000)).takeError()),
            "JSON nested deeper than the limit of 256 levels (at byte 256)");
  EXPECT_EQ(errorText(checkJSONDepth("{\"a\": " + nested(257) + "}")),
            "JSON nested deeper than the limit of 256 levels (at byte 261)");
}

TEST(JSON, BracketsInStringsDoNotCount) {
  std::string brackets(1000, '[');
  // An escaped quote does not end the string.
  std::string text = "{\"a\": \"" + brackets + "\\\"" + brackets + "\"}";
  llvm::Expected<llvm::json::Value> value = parseJSON(text);
  ASSERT_TRUE(bool(value)) << llvm::toString(value.takeError());
  EXPECT_EQ(value->getAsObject()->getString("a")->size(), 2001u);
}

TEST(JSON, ClosingBracketsDoNotUnderflow) {
  // Malformed: stray closing brackets do not lower the depth below zero and
  // let deeper nesting through afterwards.
  EXPECT_EQ(errorText(checkJSONDepth("]]]]" + nested(300))),
            "JSON nested deeper than the limit of 256 levels (at byte 260)");
  // The parser still reports the malformed text.
  EXPECT_NE(errorText(parseJSON("]]]]").takeError()), "");
}
