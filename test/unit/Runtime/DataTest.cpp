//===- DataTest.cpp - Token files, tokenizer and data loader --------------===//

#include "TestUtil.h"

#include "ratrain/runtime/Data.h"
#include "ratrain/runtime/FileIO.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include "gtest/gtest.h"

#include <fstream>
#include <set>

using namespace ratrain::rt;
using namespace ratrain::rt::test;

namespace {
std::vector<uint32_t> iota(uint32_t n, uint32_t mod) {
  std::vector<uint32_t> ids(n);
  for (uint32_t i = 0; i < n; ++i)
    ids[i] = i % mod;
  return ids;
}

void writeRaw(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string readRaw(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}
} // namespace

TEST(Tokenizer, ByteLevelRoundTripsAnyBytes) {
  std::string text = "Hello, world!\n\xff\x00\x80 caf\xc3\xa9";
  text.push_back('\0');
  std::vector<uint32_t> ids = tokenizeBytes(text);
  ASSERT_EQ(ids.size(), text.size());
  EXPECT_EQ(ids[0], uint32_t('H'));
  EXPECT_EQ(ids[14], 0xffu);
  auto back = detokenizeBytes(ids);
  ASSERT_TRUE(bool(back));
  EXPECT_EQ(*back, text);
  auto bad = detokenizeBytes({65, 300});
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "token 300 at position 1 is not a byte (the byte-level "
            "vocabulary has 256 ids)");
}

TEST(TokenFile, RoundTripsBothWidths) {
  TempDir dir;
  for (unsigned width : {2u, 4u}) {
    std::string path = dir.path("t" + std::to_string(width) + ".tok");
    std::vector<uint32_t> ids = iota(1000, width == 2 ? 50000 : 70000);
    ids[7] = width == 2 ? 65535 : 69999;
    ASSERT_EQ(
        errorText(writeTokenFile(path, ids, width == 2 ? 65536 : 70000, width)),
        "");
    auto file = TokenFile::open(path);
    ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
    EXPECT_EQ(file->size(), 1000u);
    EXPECT_EQ(file->bytesPerToken(), width);
    EXPECT_EQ(file->all(), ids);
    uint64_t bytes = 0;
    ASSERT_FALSE(llvm::sys::fs::file_size(path, bytes));
    EXPECT_EQ(bytes, kTokenFileHeaderBytes + 1000 * width);
  }
}

TEST(TokenFile, RejectsBadInput) {
  TempDir dir;
  std::string good = dir.path("good.tok");
  ASSERT_EQ(errorText(writeTokenFile(good, iota(100, 256), 256)), "");
  std::string bytes = readRaw(good);

  auto expectError = [&](const std::string &name, const std::string &content,
                         const std::string &message) {
    std::string path = dir.path(name);
    writeRaw(path, content);
    auto file = TokenFile::open(path);
    ASSERT_FALSE(bool(file)) << name;
    std::string text = llvm::toString(file.takeError());
    EXPECT_NE(text.find(message), std::string::npos) << text;
    EXPECT_NE(text.find(path), std::string::npos) << text;
  };
  expectError("truncated.tok", bytes.substr(0, bytes.size() - 3),
              "the header says 100 tokens of 2 bytes (200 bytes), but the "
              "file holds 197 bytes of tokens");
  expectError("short.tok", bytes.substr(0, 10), "truncated token file");
  std::string magic = bytes;
  magic[0] = 'X';
  expectError("magic.tok", magic, "not a RATrain token file");
  std::string version = bytes;
  version[8] = 9;
  expectError("version.tok", version, "version 9 is not supported");
  std::string width = bytes;
  width[12] = 3;
  expectError("width.tok", width, "token width 3 is not 2 or 4");

  auto missing = TokenFile::open(dir.path("missing.tok"));
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(llvm::toString(missing.takeError())
                .find("cannot read the token "
                      "file"),
            std::string::npos);

  // Writing rejects ids outside the vocabulary and leaves no file behind.
  std::string out = dir.path("bad-vocab.tok");
  EXPECT_EQ(errorText(writeTokenFile(out, {1, 2, 300}, 256)),
            out + ": token 300 at position 2 is outside the vocabulary of 256");
  EXPECT_FALSE(llvm::sys::fs::exists(out));
}

TEST(TokenizeTool, TextToTokensAndBack) {
  TempDir dir;
  std::string a = dir.path("a.txt"), b = dir.path("b.txt");
  writeRaw(a, "first file");
  writeRaw(b, "second\n");
  std::string tok = dir.path("out.tok"), txt = dir.path("out.txt");
  std::string tool = RATRAIN_TOKENIZE;
  std::string err;
  ASSERT_EQ(llvm::sys::ExecuteAndWait(tool, {tool, "-o", tok, a, b},
                                      std::nullopt, {}, 0, 0, &err),
            0)
      << err;
  auto file = TokenFile::open(tok);
  ASSERT_TRUE(bool(file));
  EXPECT_EQ(file->vocab(), 256u);
  ASSERT_EQ(llvm::sys::ExecuteAndWait(tool, {tool, "--decode", tok, "-o", txt},
                                      std::nullopt, {}, 0, 0, &err),
            0)
      << err;
  // Files are joined with a newline.
  EXPECT_EQ(readRaw(txt), "first file\nsecond\n");
  // A missing input is an error with a non-zero exit and no output file.
  std::string none = dir.path("none.tok");
  std::optional<llvm::StringRef> redirects[] = {
      std::nullopt, llvm::StringRef(""), llvm::StringRef("")};
  EXPECT_EQ(llvm::sys::ExecuteAndWait(
                tool, {tool, "-o", none, dir.path("missing.txt")}, std::nullopt,
                redirects),
            1);
  EXPECT_FALSE(llvm::sys::fs::exists(none));
}

namespace {
DataLoader makeLoader(const std::string &path, int dpSize, int dpIndex,
                      uint64_t seed, int64_t microBatch = 2) {
  auto file = TokenFile::open(path);
  EXPECT_TRUE(bool(file));
  auto loader = DataLoader::create(
      std::move(*file), {/*seqLen=*/8, microBatch, dpSize, dpIndex, seed});
  EXPECT_TRUE(bool(loader)) << llvm::toString(loader.takeError());
  return std::move(*loader);
}

/// Identifies a window by its first token (the file holds 0, 1, 2, ...).
std::vector<int32_t> nextWindows(DataLoader &loader) {
  std::vector<int32_t> batch(loader.microBatchBytes() / 4);
  loader.next(batch.data());
  std::vector<int32_t> starts;
  for (size_t row = 0; row < batch.size() / 9; ++row) {
    // Inputs and labels: seq + 1 consecutive tokens.
    for (size_t i = 1; i < 9; ++i)
      EXPECT_EQ(batch[row * 9 + i], batch[row * 9] + int32_t(i));
    starts.push_back(batch[row * 9]);
  }
  return starts;
}
} // namespace

TEST(DataLoader, ShardsAreDisjointAndCoverAnEpoch) {
  TempDir dir;
  std::string path = dir.path("data.tok");
  // 161 tokens = 20 windows of 8 + 1.
  ASSERT_EQ(errorText(writeTokenFile(path, iota(161, 1 << 16), 1 << 16)), "");
  DataLoader rank0 = makeLoader(path, 2, 0, 7),
             rank1 = makeLoader(path, 2, 1, 7);
  EXPECT_EQ(rank0.windowsPerEpoch(), 20u);
  std::multiset<int32_t> seen;
  for (int step = 0; step < 5; ++step) { // 5 x 2 ranks x 2 = 20 windows.
    for (int32_t start : nextWindows(rank0))
      seen.insert(start);
    for (int32_t start : nextWindows(rank1))
      seen.insert(start);
  }
  std::multiset<int32_t> expected;
  for (int w = 0; w < 20; ++w)
    expected.insert(w * 8);
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(rank0.position().samples, 20u);
  EXPECT_EQ(rank1.position().samples, 20u);
}

/// Uneven data-parallel shares: the replicas read every micro-batch of the
/// step once, round-robin over the replicas that still have one, and equal
/// shares give the even layout.
TEST(DataLoader, UnevenSharesDealEveryMicroBatchOnce) {
  TempDir dir;
  std::string path = dir.path("data.tok");
  ASSERT_EQ(errorText(writeTokenFile(path, iota(161, 1 << 16), 1 << 16)), "");
  auto loader = [&](std::vector<int64_t> shares, int index) {
    DataLoader::Options options;
    options.seqLen = 8;
    options.microBatch = 1;
    options.dpSize = int(shares.size());
    options.dpIndex = index;
    options.replicaMicroBatches = std::move(shares);
    auto file = TokenFile::open(path);
    EXPECT_TRUE(bool(file));
    auto created = DataLoader::create(std::move(*file), options);
    EXPECT_TRUE(bool(created)) << llvm::toString(created.takeError());
    return std::move(*created);
  };
  // Shares 3, 1: replica 0 reads the step's micro-batches 0, 2, 3.
  DataLoader first = loader({3, 1}, 0), second = loader({3, 1}, 1);
  EXPECT_EQ(first.globalMicroBatch(0), 0u);
  EXPECT_EQ(second.globalMicroBatch(0), 1u);
  EXPECT_EQ(first.globalMicroBatch(1), 2u);
  EXPECT_EQ(first.globalMicroBatch(2), 3u);
  EXPECT_EQ(first.samplesPerStep(3), 4u);
  // 3, 3, 1, 1: a permutation of 0..7.
  std::set<uint64_t> seen;
  std::vector<int64_t> shares = {3, 3, 1, 1};
  for (int r = 0; r < 4; ++r) {
    DataLoader replica = loader(shares, r);
    for (int64_t mb = 0; mb < shares[r]; ++mb)
      EXPECT_TRUE(seen.insert(replica.globalMicroBatch(mb)).second);
  }
  EXPECT_EQ(seen, (std::set<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  // Equal shares: microBatch * dp + replica, as without shares.
  DataLoader even = loader({2, 2}, 1);
  EXPECT_EQ(even.globalMicroBatch(1), 3u);
  // A share per replica, each at least 1.
  DataLoader::Options wrong;
  wrong.seqLen = 8;
  wrong.dpSize = 2;
  wrong.replicaMicroBatches = {3};
  auto wrongFile = TokenFile::open(path);
  ASSERT_TRUE(bool(wrongFile));
  auto refused = DataLoader::create(std::move(*wrongFile), wrong);
  ASSERT_FALSE(bool(refused));
  EXPECT_NE(llvm::toString(refused.takeError()).find("1 replica shares"),
            std::string::npos);
}

TEST(DataLoader, AWindowRangeSplitsTheFileWithoutOverlap) {
  TempDir dir;
  std::string path = dir.path("data.tok");
  // 161 tokens = 20 windows of 8 + 1: training on the first 16, the last 4
  // held out.
  ASSERT_EQ(errorText(writeTokenFile(path, iota(161, 1 << 16), 1 << 16)), "");
  auto open = [&] { return std::move(*TokenFile::open(path)); };
  DataLoader::Options train{8, 2, 1, 0, 7};
  train.windowCount = 16;
  DataLoader::Options held{8, 2, 1, 0, 7};
  held.firstWindow = 16;
  held.windowCount = 4;
  auto trainLoader = DataLoader::create(open(), train);
  auto heldLoader = DataLoader::create(open(), held);
  ASSERT_TRUE(bool(trainLoader) && bool(heldLoader));
  EXPECT_EQ(trainLoader->windowsPerEpoch(), 16u);
  EXPECT_EQ(heldLoader->windowsPerEpoch(), 4u);
  std::set<int32_t> trained, heldOut;
  for (int step = 0; step < 8; ++step) // 8 x 2 = one epoch of 16
    for (int32_t start : nextWindows(*trainLoader))
      trained.insert(start);
  for (int step = 0; step < 2; ++step)
    for (int32_t start : nextWindows(*heldLoader))
      heldOut.insert(start);
  EXPECT_EQ(trained.size(), 16u);
  EXPECT_EQ(*trained.rbegin(), 15 * 8);
  EXPECT_EQ(heldOut, (std::set<int32_t>{128, 136, 144, 152}));
  // A range past the file's windows is refused.
  DataLoader::Options beyond{8, 2, 1, 0, 7};
  beyond.firstWindow = 18;
  beyond.windowCount = 4;
  auto bad = DataLoader::create(open(), beyond);
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError())
                .find("windows [18, +4) are not among its 20 windows"),
            std::string::npos);
}

TEST(DataLoader, DeterministicFromSeedAndShuffledPerEpoch) {
  TempDir dir;
  std::string path = dir.path("data.tok");
  ASSERT_EQ(errorText(writeTokenFile(path, iota(161, 1 << 16), 1 << 16)), "");
  DataLoader a = makeLoader(path, 1, 0, 123), b = makeLoader(path, 1, 0, 123),
             c = makeLoader(path, 1, 0, 124);
  std::vector<int32_t> epoch0a, epoch0b, epoch0c, epoch1a;
  for (int i = 0; i < 10; ++i) {
    for (int32_t s : nextWindows(a))
      epoch0a.push_back(s);
    for (int32_t s : nextWindows(b))
      epoch0b.push_back(s);
    for (int32_t s : nextWindows(c))
      epoch0c.push_back(s);
  }
  for (int i = 0; i < 10; ++i)
    for (int32_t s : nextWindows(a))
      epoch1a.push_back(s);
  EXPECT_EQ(epoch0a, epoch0b);
  EXPECT_NE(epoch0a, epoch0c);
  EXPECT_NE(epoch0a, epoch1a);
  std::vector<int32_t> sorted0 = epoch0a, sorted1 = epoch1a;
  std::sort(sorted0.begin(), sorted0.end());
  std::sort(sorted1.begin(), sorted1.end());
  EXPECT_EQ(sorted0, sorted1); // Each epoch is a permutation of the windows.
  // The permutation is pinned: a change in the shuffle would silently change
  // every training run's data order, so it must be deliberate.
  EXPECT_EQ(std::vector<int32_t>(epoch0a.begin(), epoch0a.begin() + 6),
            (std::vector<int32_t>{128, 144, 8, 120, 56, 48}));
}

TEST(DataLoader, ResumeFromAPositionRepeatsTheSameBatches) {
  TempDir dir;
  std::string path = dir.path("data.tok");
  ASSERT_EQ(errorText(writeTokenFile(path, iota(401, 1 << 16), 1 << 16)), "");
  DataLoader straight = makeLoader(path, 2, 1, 99);
  std::vector<std::vector<int32_t>> expected;
  DataPosition saved;
  for (int step = 0; step < 30; ++step) {
    if (step == 13)
      saved = straight.position();
    expected.push_back(nextWindows(straight));
  }
  DataLoader resumed = makeLoader(path, 2, 1, 99);
  resumed.seek(saved);
  for (int step = 13; step < 30; ++step)
    EXPECT_EQ(nextWindows(resumed), expected[step]) << "step " << step;
}

TEST(DataLoader, WritesIntoAnArenaBuffer) {
  TempDir dir;
  std::string path = dir.path("data.tok");
  ASSERT_EQ(errorText(writeTokenFile(path, iota(161, 256), 256)), "");
  DataLoader loader = makeLoader(path, 1, 0, 1);
  auto arena = Arena::create(MemorySpace::DDR, 1024);
  ASSERT_TRUE(bool(arena));
  Buffer batch = (*arena)->buffer(64, loader.microBatchBytes());
  loader.next(batch);
  EXPECT_EQ(batch.as<int32_t>()[1], batch.as<int32_t>()[0] + 1);
  EXPECT_EXIT(loader.next((*arena)->buffer(0, 8)), testing::ExitedWithCode(1),
              "smaller than one micro-batch \\(72 bytes\\)");
}

TEST(DataLoader, RejectsTooSmallFilesAndBadOptions) {
  TempDir dir;
  std::string path = dir.path("small.tok");
  ASSERT_EQ(errorText(writeTokenFile(path, iota(20, 256), 256)), "");
  auto file = TokenFile::open(path);
  ASSERT_TRUE(bool(file));
  auto tooSmall = DataLoader::create(*file, {8, 2, 2, 0, 0});
  ASSERT_FALSE(bool(tooSmall));
  EXPECT_NE(llvm::toString(tooSmall.takeError())
                .find("20 tokens make 2 windows of 8+1 tokens, fewer than one "
                      "micro-batch across the data-parallel group (2 x 2)"),
            std::string::npos);
  auto badIndex = DataLoader::create(*file, {4, 1, 2, 2, 0});
  ASSERT_FALSE(bool(badIndex));
  EXPECT_NE(llvm::toString(badIndex.takeError()).find("index 2 is not in"),
            std::string::npos);
}

TEST(DataLoader, FillMatchesNextAndSplitsInputsAndLabels) {
  TempDir dir;
  std::string path = dir.path("data.tok");
  ASSERT_EQ(errorText(writeTokenFile(path, iota(801, 1 << 16), 1 << 16)), "");
  for (int rank = 0; rank < 2; ++rank) {
    DataLoader sequential = makeLoader(path, 2, rank, 5);
    DataLoader random = makeLoader(path, 2, rank, 5);
    // Step 3 of a run with 3 micro-batches per step.
    DataPosition stepStart{3 * random.samplesPerStep(3)};
    sequential.seek(stepStart);
    for (int mb = 0; mb < 3; ++mb) {
      std::vector<int32_t> windows(sequential.microBatchBytes() / 4);
      sequential.next(windows.data());
      std::vector<int32_t> inputs(random.fieldBytes() / 4),
          labels(random.fieldBytes() / 4);
      random.fill(stepStart, mb, BatchField::Inputs, inputs.data());
      random.fill(stepStart, mb, BatchField::Labels, labels.data());
      for (int row = 0; row < 2; ++row)
        for (int t = 0; t < 8; ++t) {
          EXPECT_EQ(inputs[row * 8 + t], windows[row * 9 + t]);
          EXPECT_EQ(labels[row * 8 + t], windows[row * 9 + t + 1]);
        }
    }
    EXPECT_EQ(random.position().samples, 0u); // fill() does not move.
  }
}

namespace {
/// A Megatron-LM indexed dataset written from the format's description:
/// PREFIX.idx ("MMIDIDX\0\0", version 1, dtype code, sequence and document
/// counts, int32 lengths, int64 byte offsets, int64 document indices) and
/// PREFIX.bin (the sequences' tokens back to back).
void writeMegatron(const std::string &prefix,
                   const std::vector<std::vector<uint32_t>> &sequences,
                   uint8_t code, std::string *indexOut = nullptr) {
  unsigned width = code == 8 ? 2 : 4;
  std::string idx("MMIDIDX\0\0", 9), bin;
  auto put = [](std::string &s, uint64_t v, unsigned bytes) {
    for (unsigned i = 0; i < bytes; ++i)
      s.push_back(char((v >> (8 * i)) & 0xff));
  };
  put(idx, 1, 8);
  idx.push_back(char(code));
  put(idx, sequences.size(), 8);
  put(idx, 2, 8); // two documents: [0, 1) and [1, n)
  for (const auto &seq : sequences)
    put(idx, seq.size(), 4);
  uint64_t offset = 0;
  for (const auto &seq : sequences) {
    put(idx, offset, 8);
    offset += seq.size() * width;
  }
  put(idx, 0, 8);
  put(idx, 1, 8);
  for (const auto &seq : sequences)
    for (uint32_t id : seq)
      put(bin, id, width);
  writeRaw(prefix + ".idx", idx);
  writeRaw(prefix + ".bin", bin);
  if (indexOut)
    *indexOut = idx;
}
} // namespace

TEST(TokenFile, ReadsMegatronIndexedDatasets) {
  TempDir dir;
  std::vector<std::vector<uint32_t>> sequences = {
      {5, 6, 7}, {60000, 1}, {}, {9, 8, 7, 6, 5}};
  std::vector<uint32_t> stream = {5, 6, 7, 60000, 1, 9, 8, 7, 6, 5};
  for (uint8_t code : {uint8_t(8), uint8_t(4)}) {
    std::string prefix = dir.path("data" + std::to_string(code));
    writeMegatron(prefix, sequences, code);
    // The prefix, the index or the data file name the same dataset.
    for (std::string path : {prefix, prefix + ".idx", prefix + ".bin"}) {
      auto file = TokenFile::open(path);
      ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
      EXPECT_EQ(file->all(), stream);
      EXPECT_EQ(file->bytesPerToken(), code == 8 ? 2u : 4u);
      EXPECT_EQ(file->vocab(), 0u); // not recorded
    }
  }
}

TEST(TokenFile, RejectsBadMegatronIndexes) {
  TempDir dir;
  std::string prefix = dir.path("bad"), index;
  writeMegatron(prefix, {{1, 2, 3}, {4, 5}}, 8, &index);
  auto expectError = [&](const std::string &idx, const std::string &bin,
                         const std::string &message) {
    writeRaw(prefix + ".idx", idx);
    writeRaw(prefix + ".bin", bin);
    auto file = TokenFile::open(prefix);
    ASSERT_FALSE(bool(file)) << message;
    std::string text = llvm::toString(file.takeError());
    EXPECT_NE(text.find(message), std::string::npos) << text;
  };
  std::string bin = readRaw(prefix + ".bin");
  std::string magic = index;
  magic[0] = 'X';
  expectError(magic, bin, "bad.idx: not a Megatron indexed dataset index");
  std::string version = index;
  version[9] = 2;
  expectError(version, bin, "index version 2 is not supported");
  std::string dtype = index;
  dtype[17] = 6; // float64
  expectError(dtype, bin, "token dtype code 6 is not supported");
  expectError(index, bin.substr(0, bin.size() - 2),
              "sequence 1 ends at byte 10, past the 8 bytes of");
  expectError(index, bin + "xx", "the sequences hold 10 bytes, ");
  expectError(index.substr(0, index.size() - 9), bin,
              "2 sequences and 2 documents need 40 bytes of index");
  std::string pointer = index;
  pointer[9 + 8 + 1 + 8 + 8 + 8 + 8] = 4; // sequence 1 at byte 4, not 6
  expectError(pointer, bin, "sequence 1 starts at byte 4");
  std::string count = index;
  count[18] = 0x7f; // 127 sequences
  expectError(count, bin, "127 sequences and 2 documents need");
}

TEST(TokenFile, ReadsFlatArraysOfIds) {
  TempDir dir;
  std::string path = dir.path("train.bin");
  std::string bytes;
  for (uint32_t id : {1u, 2u, 65535u, 3u})
    bytes += std::string{char(id & 0xff), char(id >> 8)};
  writeRaw(path, bytes);
  auto u16 = TokenFile::open("u16:" + path);
  ASSERT_TRUE(bool(u16)) << llvm::toString(u16.takeError());
  EXPECT_EQ(u16->all(), (std::vector<uint32_t>{1, 2, 65535, 3}));
  auto u32 = TokenFile::open("u32:" + path);
  ASSERT_TRUE(bool(u32)) << llvm::toString(u32.takeError());
  EXPECT_EQ(u32->all(), (std::vector<uint32_t>{0x20001, 0x3ffff}));
  writeRaw(path, bytes + "x");
  auto odd = TokenFile::open("u16:" + path);
  ASSERT_FALSE(bool(odd));
  EXPECT_NE(llvm::toString(odd.takeError())
                .find("9 bytes is not a whole number of 2-byte token ids"),
            std::string::npos);
  // Without a prefix, a file of no known format names the ways to read it.
  auto plain = TokenFile::open(path);
  ASSERT_FALSE(bool(plain));
  EXPECT_NE(llvm::toString(plain.takeError()).find("read as u16:"),
            std::string::npos);
}

TEST(DataLoader, ChecksIdsAgainstTheModelVocabulary) {
  TempDir dir;
  std::string prefix = dir.path("ids");
  std::vector<uint32_t> ids = iota(64, 200);
  ids[37] = 300;
  writeMegatron(prefix, {ids}, 8);
  auto file = TokenFile::open(prefix);
  ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
  DataLoader::Options options;
  options.seqLen = 7;
  options.vocabLimit = 256;
  auto loader = DataLoader::create(std::move(*file), options);
  ASSERT_TRUE(bool(loader)) << llvm::toString(loader.takeError());
  std::vector<int32_t> out(loader->microBatchBytes() / 4);
  EXPECT_EXIT(
      {
        for (int i = 0; i < 9; ++i)
          loader->next(out.data());
      },
      testing::ExitedWithCode(1),
      "ids.bin: token id 300 at position 37 is not below the model's "
      "vocab_size 256");
}
