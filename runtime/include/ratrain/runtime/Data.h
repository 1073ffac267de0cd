//===- Data.h - Token files, byte-level tokenizer, data loader --*- C++ -*-===//
//
// Token file (little-endian):
//   offset 0  char[8]  magic "RATRTOK\0"
//   offset 8  uint32   version (1)
//   offset 12 uint32   bytes per token id: 2 (uint16) or 4 (uint32)
//   offset 16 uint64   number of tokens
//   offset 24 uint32   vocabulary size (every id is below it)
//   offset 28 uint32   reserved (0)
//   offset 32          the token ids
//
// TokenFile also reads, as one stream of token ids:
//  - Megatron-LM indexed datasets: PREFIX.idx + PREFIX.bin (given as PREFIX,
//    PREFIX.idx or PREFIX.bin), uint16 or int32 tokens, the sequences back
//    to back (as Megatron's GPT dataset concatenates them);
//  - flat little-endian arrays of uint16 or uint32 ids (nanoGPT's train.bin),
//    named `u16:FILE` or `u32:FILE`.
// Neither records a vocabulary (vocab() is 0); the data loader checks every
// id it reads against the model's (Options::vocabLimit).
//
// The byte-level tokenizer maps every byte of the text to the id of its value
// (vocabulary 256), so decoding is the identity and round-trips any file.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_DATA_H
#define RATRAIN_RUNTIME_DATA_H

#include "ratrain/runtime/Arena.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ratrain::rt {

constexpr char kTokenFileMagic[8] = {'R', 'A', 'T', 'R', 'T', 'O', 'K', '\0'};
constexpr uint32_t kTokenFileVersion = 1;
constexpr uint64_t kTokenFileHeaderBytes = 32;
/// Vocabulary of the byte-level tokenizer.
constexpr uint32_t kByteVocab = 256;

/// Byte-level tokenizer: byte b -> id b.
std::vector<uint32_t> tokenizeBytes(llvm::StringRef text);
/// Inverse of tokenizeBytes; an id >= 256 is an error naming its position.
llvm::Expected<std::string> detokenizeBytes(llvm::ArrayRef<uint32_t> ids);

/// Writes a token file atomically (temporary file in the same directory,
/// fsync, rename). `bytesPerToken` is 2 or 4; ids must fit it and be below
/// `vocab`.
llvm::Error writeTokenFile(llvm::StringRef path, llvm::ArrayRef<uint32_t> ids,
                           uint32_t vocab, unsigned bytesPerToken = 2);

/// A token file mapped read-only and validated (magic, version, width,
/// size matches the header), or a Megatron indexed dataset (its index
/// checked against the data: sizes, offsets, document indices), or a flat
/// array (`u16:` / `u32:`). Errors name the file and what is wrong.
class TokenFile {
public:
  static llvm::Expected<TokenFile> open(llvm::StringRef path);

  uint64_t size() const { return count; }
  /// Every id is below it; 0 when the format does not record it.
  uint32_t vocab() const { return vocabSize; }
  unsigned bytesPerToken() const { return width; }
  const std::string &path() const { return fileName; }
  uint32_t operator[](uint64_t index) const;
  /// Copies ids [start, start + n) into `out` (uint32 each).
  void read(uint64_t start, uint64_t n, uint32_t *out) const;
  /// Every id as uint32 (tests and tools).
  std::vector<uint32_t> all() const;

private:
  static llvm::Expected<TokenFile> openFlat(llvm::StringRef path,
                                            unsigned width);
  static llvm::Expected<TokenFile> openMegatron(llvm::StringRef prefix);

  std::shared_ptr<llvm::MemoryBuffer> file;
  std::string fileName;
  const unsigned char *ids = nullptr;
  uint64_t count = 0;
  uint32_t vocabSize = 0;
  unsigned width = 2;
};

/// Where the loader stands: the number of samples (windows) consumed by the
/// whole data-parallel group. Saved in checkpoints; resuming from it repeats
/// exactly the same samples.
struct DataPosition {
  uint64_t samples = 0;
};

/// What mt3k.load_batch reads: the token ids or the next-token targets.
enum class BatchField : unsigned char { Inputs, Labels };

/// Cuts a token file into non-overlapping windows of seqLen + 1 tokens
/// (inputs and shifted labels), shuffles them per epoch with a seeded
/// permutation (SplitMix64 + Fisher-Yates, identical on every platform) and
/// deals each micro-batch of dp x microBatch windows round-robin: data rank d
/// takes windows d*microBatch .. d*microBatch + microBatch - 1 of it.
class DataLoader {
public:
  struct Options {
    int64_t seqLen = 0;
    int64_t microBatch = 1;
    int dpSize = 1;
    int dpIndex = 0;
    uint64_t seed = 0;
    /// When not 0, every id read must be below it (the model's vocabulary):
    /// another is fatal, naming the file, the id and its position.
    uint32_t vocabLimit = 0;
    /// The windows the loader deals: [firstWindow, firstWindow +
    /// windowCount) of the file's (windowCount 0: to the end). A held-out
    /// split for validation is the file's last windows, training the rest.
    uint64_t firstWindow = 0;
    uint64_t windowCount = 0;
    /// Uneven data-parallel shares: the micro-batches of each of the dpSize
    /// replicas (empty: every replica runs the same count). The step's
    /// micro-batches are dealt round-robin over the replicas that still
    /// have one, so equal shares give the even layout.
    std::vector<int64_t> replicaMicroBatches;
  };
  /// Fails when the file holds fewer than dpSize * microBatch windows or when
  /// an option is invalid (the message names it).
  static llvm::Expected<DataLoader> create(TokenFile file, Options options);

  /// Windows in one epoch.
  uint64_t windowsPerEpoch() const { return numWindows; }
  /// Tokens of one window: seqLen + 1.
  uint64_t windowTokens() const { return uint64_t(opts.seqLen) + 1; }
  /// Bytes of one micro-batch as int32 ids: microBatch x (seqLen + 1) x 4.
  uint64_t microBatchBytes() const {
    return uint64_t(opts.microBatch) * windowTokens() * 4;
  }

  DataPosition position() const { return pos; }
  void seek(DataPosition position) { pos = position; }

  /// Fills `out` (at least microBatchBytes(), row-major microBatch x
  /// (seqLen + 1) int32 ids) with this rank's next micro-batch and advances
  /// the position by dpSize x microBatch samples. Allocates only when an
  /// epoch starts (the permutation).
  void next(Buffer out);
  /// Same into a plain array.
  void next(int32_t *out);

  /// mt3k.load_batch: writes the `field` of micro-batch `microBatch` of the
  /// step that starts at `stepStart` into `out` ([microBatch, seqLen] int32):
  /// Inputs are tokens 0 .. seqLen-1 of each window, Labels tokens
  /// 1 .. seqLen. Micro-batch k of a step holds the same windows as the k-th
  /// next() call from `stepStart`. Does not move the position.
  void fill(DataPosition stepStart, int64_t microBatch, BatchField field,
            int32_t *out);
  void fill(DataPosition stepStart, int64_t microBatch, BatchField field,
            Buffer out);
  /// Bytes of one fill(): microBatch x seqLen x 4.
  uint64_t fieldBytes() const {
    return uint64_t(opts.microBatch) * uint64_t(opts.seqLen) * 4;
  }
  /// Samples one step of `microBatches` micro-batches consumes across the
  /// data-parallel group.
  uint64_t samplesPerStep(int64_t microBatches) const {
    if (!opts.replicaMicroBatches.empty()) {
      uint64_t total = 0;
      for (int64_t m : opts.replicaMicroBatches)
        total += uint64_t(m);
      return total * uint64_t(opts.microBatch);
    }
    return uint64_t(microBatches) * uint64_t(opts.dpSize) *
           uint64_t(opts.microBatch);
  }
  /// The index among the step's micro-batches (over all replicas) of this
  /// replica's micro-batch `microBatch`: microBatch * dpSize + dpIndex with
  /// even shares.
  uint64_t globalMicroBatch(int64_t microBatch) const;

  /// Window index (in token units: window w starts at w * seqLen) of global
  /// sample `sample`.
  uint64_t windowOfSample(uint64_t sample);

  const Options &options() const { return opts; }
  const TokenFile &tokens() const { return file; }

private:
  DataLoader(TokenFile file, Options options, uint64_t windows);
  void preparePermutation(uint64_t epoch);
  /// Reads window `window` into scratch and checks its ids.
  void readWindow(uint64_t window);

  TokenFile file;
  Options opts;
  uint64_t numWindows = 0;
  DataPosition pos;
  uint64_t permutationEpoch = UINT64_MAX;
  std::vector<uint64_t> permutation;
  std::vector<uint32_t> scratch;
};

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_DATA_H
