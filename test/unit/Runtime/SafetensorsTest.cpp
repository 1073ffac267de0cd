//===- SafetensorsTest.cpp - safetensors round trip and validation --------===//

#include "TestUtil.h"

#include "ratrain/runtime/FileIO.h"
#include "ratrain/runtime/Safetensors.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <fstream>

using namespace ratrain::rt;
using namespace ratrain::rt::test;

namespace {
std::string readRaw(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, false, false);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}
void writeRaw(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// Writes a file with an f32 [2, 3] tensor "a" and a bf16 [4] tensor "b".
std::string writeSample(const TempDir &dir, const std::string &name) {
  static const float a[6] = {1, 2, 3, 4, 5, 6};
  static const uint16_t b[4] = {0x3f80, 0x4000, 0x4040, 0x4080};
  SafetensorsWriter writer;
  writer.add("a", "F32", {2, 3}, a, sizeof(a));
  writer.add("b", "BF16", {4}, b, sizeof(b));
  writer.setMetadata("format", "pt");
  std::string path = dir.path(name);
  EXPECT_EQ(errorText(writer.write(path)), "");
  return path;
}

std::string openError(const std::string &path) {
  auto file = SafetensorsFile::open(path);
  return file ? std::string() : llvm::toString(file.takeError());
}
} // namespace

TEST(Safetensors, RoundTrip) {
  TempDir dir;
  std::string path = writeSample(dir, "x.safetensors");
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
  ASSERT_EQ(file->tensors().size(), 2u);
  const TensorInfo *a = file->find("a");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->dtype, "F32");
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->begin, 0u);
  EXPECT_EQ(a->end, 24u);
  EXPECT_EQ(file->metadata().at("format"), "pt");
  EXPECT_TRUE(file->metadata().count(checksumKey("a")));
  float out[6];
  ASSERT_EQ(errorText(file->read("a", "F32", {2, 3}, out, sizeof(out))), "");
  EXPECT_EQ(out[5], 6.0f);
  uint16_t b[4];
  ASSERT_EQ(errorText(file->read("b", "BF16", {4}, b, sizeof(b))), "");
  EXPECT_EQ(b[3], 0x4080);
}

TEST(Safetensors, LayoutFollowsTheSpecification) {
  TempDir dir;
  std::string bytes = readRaw(writeSample(dir, "x.safetensors"));
  uint64_t headerBytes = llvm::support::endian::read64le(bytes.data());
  EXPECT_EQ((8 + headerBytes) % 8, 0u); // Data starts 8-byte aligned.
  EXPECT_EQ(bytes.size(), 8 + headerBytes + 24 + 8);
  std::string header = bytes.substr(8, headerBytes);
  EXPECT_NE(header.find("\"a\":{\"data_offsets\":[0,24],\"dtype\":\"F32\","
                        "\"shape\":[2,3]}"),
            std::string::npos)
      << header;
  float first;
  std::memcpy(&first, bytes.data() + 8 + headerBytes, 4);
  EXPECT_EQ(first, 1.0f); // Raw little-endian data.
}

TEST(Safetensors, ReportsWrongShapeDtypeAndMissingTensors) {
  TempDir dir;
  std::string path = writeSample(dir, "x.safetensors");
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(bool(file));
  float out[6];
  EXPECT_EQ(errorText(file->read("a", "F32", {3, 2}, out, sizeof(out))),
            path + ": tensor 'a' has shape [2, 3], the model expects [3, 2]");
  EXPECT_EQ(errorText(file->read("a", "BF16", {2, 3}, out, 12)),
            path + ": tensor 'a' has dtype F32, the model expects BF16");
  EXPECT_EQ(errorText(file->read("c", "F32", {1}, out, 4)),
            path + ": tensor 'c' is missing");
}

TEST(Safetensors, DetectsTruncationAndCorruption) {
  TempDir dir;
  std::string path = writeSample(dir, "x.safetensors");
  std::string bytes = readRaw(path);
  uint64_t headerBytes = llvm::support::endian::read64le(bytes.data());

  std::string truncated = dir.path("truncated.safetensors");
  writeRaw(truncated, bytes.substr(0, bytes.size() - 5));
  EXPECT_NE(openError(truncated).find("tensor 'b' ends at data offset 32, but "
                                      "the file holds 27 bytes of data "
                                      "(truncated)"),
            std::string::npos)
      << openError(truncated);

  std::string tiny = dir.path("tiny.safetensors");
  writeRaw(tiny, bytes.substr(0, 5));
  EXPECT_NE(openError(tiny).find("shorter than the 8-byte header length"),
            std::string::npos);

  std::string headerCut = dir.path("header-cut.safetensors");
  writeRaw(headerCut, bytes.substr(0, 8 + headerBytes / 2));
  EXPECT_NE(openError(headerCut).find("exceeds the file size"),
            std::string::npos);

  std::string badJSON = dir.path("bad-json.safetensors");
  std::string mangled = bytes;
  mangled[8] = '[';
  writeRaw(badJSON, mangled);
  EXPECT_NE(openError(badJSON).find("corrupt safetensors file"),
            std::string::npos);

  std::string extra = dir.path("extra.safetensors");
  writeRaw(extra, bytes + "zz");
  EXPECT_NE(openError(extra).find("the tensors cover 32 bytes of data, the "
                                  "file holds 34"),
            std::string::npos);

  // A flipped bit in the data passes the structural checks but not the
  // checksum.
  std::string flipped = dir.path("flipped.safetensors");
  std::string corrupt = bytes;
  corrupt[8 + headerBytes + 4] ^= 0x10;
  writeRaw(flipped, corrupt);
  auto file = SafetensorsFile::open(flipped);
  ASSERT_TRUE(bool(file));
  float out[6];
  std::string message = errorText(file->read("a", "F32", {2, 3}, out, 24));
  EXPECT_NE(message.find(flipped + ": tensor 'a' is corrupt: its data "
                                   "checksum is"),
            std::string::npos)
      << message;
  uint16_t b[4];
  EXPECT_EQ(errorText(file->read("b", "BF16", {4}, b, 8)), "");
}

TEST(Safetensors, WriterRejectsInconsistentTensors) {
  TempDir dir;
  float data[4] = {};
  SafetensorsWriter writer;
  writer.add("w", "F32", {2, 3}, data, sizeof(data));
  std::string path = dir.path("bad.safetensors");
  EXPECT_EQ(errorText(writer.write(path)),
            path + ": tensor 'w' of shape [2, 3] and dtype F32 needs 24 "
                   "bytes, given 16");
  EXPECT_FALSE(llvm::sys::fs::exists(path));
  SafetensorsWriter unknown;
  unknown.add("w", "Q4", {4}, data, sizeof(data));
  EXPECT_NE(errorText(unknown.write(path)).find("unknown dtype 'Q4'"),
            std::string::npos);
}

TEST(Safetensors, FailedWriteLeavesTheOldFileIntact) {
  TempDir dir;
  std::string path = writeSample(dir, "x.safetensors");
  std::string before = readRaw(path);
  std::vector<float> big(1 << 16, 3.0f);
  SafetensorsWriter writer;
  writer.add("big", "F32", {int64_t(big.size())}, big.data(), big.size() * 4);
  AtomicFile::setWriteFailureAfterForTesting(100000);
  std::string message = errorText(writer.write(path));
  AtomicFile::setWriteFailureAfterForTesting(UINT64_MAX);
  EXPECT_NE(message.find(path + ": write failed after 100000 bytes"),
            std::string::npos)
      << message;
  EXPECT_EQ(readRaw(path), before);
  // No temporary file is left behind.
  EXPECT_EQ(listDirectory(dir.str()),
            std::vector<std::string>{"x.safetensors"});
}
