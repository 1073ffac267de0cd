//===- Data.cpp - Token files, byte-level tokenizer, data loader ----------===//

#include "ratrain/runtime/Data.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/FileIO.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstring>

using namespace ratrain::rt;

std::vector<uint32_t> ratrain::rt::tokenizeBytes(llvm::StringRef text) {
  std::vector<uint32_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i)
    ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

llvm::Expected<std::string>
ratrain::rt::detokenizeBytes(llvm::ArrayRef<uint32_t> ids) {
  std::string text(ids.size(), '\0');
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= kByteVocab)
      return makeError(llvm::formatv("token {0} at position {1} is not a byte "
                                     "(the byte-level vocabulary has 256 ids)",
                                     ids[i], i));
    text[i] = char(ids[i]);
  }
  return text;
}

llvm::Error ratrain::rt::writeTokenFile(llvm::StringRef path,
                                        llvm::ArrayRef<uint32_t> ids,
                                        uint32_t vocab,
                                        unsigned bytesPerToken) {
  if (bytesPerToken != 2 && bytesPerToken != 4)
    return makeError(llvm::formatv("{0}: token width must be 2 or 4 bytes, "
                                   "got {1}",
                                   path, bytesPerToken));
  if (vocab == 0 || (bytesPerToken == 2 && vocab > 65536))
    return makeError(llvm::formatv("{0}: vocabulary {1} does not fit {2}-byte "
                                   "token ids",
                                   path, vocab, bytesPerToken));
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >= vocab)
      return makeError(llvm::formatv("{0}: token {1} at position {2} is "
                                     "outside the vocabulary of {3}",
                                     path, ids[i], i, vocab));
  unsigned char header[kTokenFileHeaderBytes] = {};
  std::memcpy(header, kTokenFileMagic, 8);
  llvm::support::endian::write32le(header + 8, kTokenFileVersion);
  llvm::support::endian::write32le(header + 12, bytesPerToken);
  llvm::support::endian::write64le(header + 16, ids.size());
  llvm::support::endian::write32le(header + 24, vocab);
  auto file = AtomicFile::create(path);
  if (!file)
    return file.takeError();
  if (llvm::Error error = file->write(header, sizeof(header)))
    return error;
  // Encode in chunks to bound the staging memory.
  std::vector<unsigned char> chunk;
  const size_t chunkTokens = size_t(1) << 20;
  for (size_t start = 0; start < ids.size(); start += chunkTokens) {
    size_t n = std::min(chunkTokens, ids.size() - start);
    chunk.resize(n * bytesPerToken);
    for (size_t i = 0; i < n; ++i) {
      if (bytesPerToken == 2)
        llvm::support::endian::write16le(&chunk[i * 2],
                                         uint16_t(ids[start + i]));
      else
        llvm::support::endian::write32le(&chunk[i * 4], ids[start + i]);
    }
    if (llvm::Error error = file->write(chunk.data(), chunk.size()))
      return error;
  }
  return file->commit();
}

namespace {
/// Megatron-LM's indexed dataset (megatron/core/datasets/indexed_dataset.py):
/// PREFIX.idx holds "MMIDIDX\0\0", the version (uint64, 1), the token dtype
/// code (uint8), the sequence and document counts (uint64 each), the
/// sequence lengths (int32), the sequences' byte offsets into PREFIX.bin
/// (int64) and the document indices (int64); PREFIX.bin the tokens.
constexpr char kMegatronMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
constexpr uint64_t kMegatronHeaderBytes = 9 + 8 + 1 + 8 + 8;

/// Bytes per token of a Megatron dtype code we read (uint16 = 8, int32 = 4);
/// 0 otherwise.
unsigned megatronTokenBytes(uint8_t code) {
  return code == 8 ? 2 : code == 4 ? 4 : 0;
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
mapFile(llvm::StringRef path, llvm::StringRef what) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError(llvm::formatv("{0}: cannot read the {1}: {2}", path, what,
                                   buffer.getError().message()));
  return std::move(*buffer);
}
} // namespace

llvm::Expected<TokenFile> TokenFile::openFlat(llvm::StringRef path,
                                              unsigned width) {
  auto buffer = mapFile(path, "token array");
  if (!buffer)
    return buffer.takeError();
  uint64_t bytes = (*buffer)->getBufferSize();
  if (bytes % width != 0)
    return makeError(llvm::formatv("{0}: {1} bytes is not a whole number of "
                                   "{2}-byte token ids",
                                   path, bytes, width));
  TokenFile file;
  file.fileName = path.str();
  file.ids =
      reinterpret_cast<const unsigned char *>((*buffer)->getBufferStart());
  file.file = std::shared_ptr<llvm::MemoryBuffer>(std::move(*buffer));
  file.count = bytes / width;
  file.width = width;
  return file;
}

llvm::Expected<TokenFile> TokenFile::openMegatron(llvm::StringRef prefix) {
  std::string indexPath = (prefix + ".idx").str(),
              dataPath = (prefix + ".bin").str();
  auto index = mapFile(indexPath, "Megatron index");
  if (!index)
    return index.takeError();
  llvm::StringRef idx = (*index)->getBuffer();
  auto fail = [&](const llvm::Twine &message) {
    return makeError(indexPath + ": " + message);
  };
  if (idx.size() < kMegatronHeaderBytes ||
      std::memcmp(idx.data(), kMegatronMagic, 9) != 0)
    return fail("not a Megatron indexed dataset index (no MMIDIDX header)");
  auto *p = reinterpret_cast<const unsigned char *>(idx.data());
  uint64_t version = llvm::support::endian::read64le(p + 9);
  if (version != 1)
    return fail(llvm::formatv("index version {0} is not supported "
                              "(expected 1)",
                              version));
  uint8_t code = p[17];
  unsigned width = megatronTokenBytes(code);
  if (!width)
    return fail(llvm::formatv("token dtype code {0} is not supported "
                              "(uint16 = 8, int32 = 4)",
                              unsigned(code)));
  uint64_t sequences = llvm::support::endian::read64le(p + 18);
  uint64_t documents = llvm::support::endian::read64le(p + 26);
  uint64_t body = idx.size() - kMegatronHeaderBytes;
  // 4 + 8 bytes per sequence, 8 per document: bounded by the file.
  if (sequences > body / 12 || documents > body / 8 ||
      12 * sequences + 8 * documents > body)
    return fail(
        llvm::formatv("{0} sequences and {1} documents need {2} "
                      "bytes of index, the file has {3}",
                      sequences, documents,
                      sequences > body / 12 || documents > body / 8
                          ? std::string("more")
                          : std::to_string(12 * sequences + 8 * documents),
                      body));
  const unsigned char *sizes = p + kMegatronHeaderBytes;
  const unsigned char *pointers = sizes + 4 * sequences;
  const unsigned char *docs = pointers + 8 * sequences;
  auto data = mapFile(dataPath, "Megatron data");
  if (!data)
    return data.takeError();
  uint64_t dataBytes = (*data)->getBufferSize();
  // The sequences lie back to back from byte 0, as Megatron writes them.
  uint64_t offset = 0;
  for (uint64_t i = 0; i < sequences; ++i) {
    int32_t length = int32_t(llvm::support::endian::read32le(sizes + 4 * i));
    uint64_t pointer = llvm::support::endian::read64le(pointers + 8 * i);
    if (length < 0)
      return fail(llvm::formatv("sequence {0} has length {1}", i, length));
    if (pointer != offset)
      return fail(llvm::formatv("sequence {0} starts at byte {1} of {2}, "
                                "not at {3} where sequence {4} ends",
                                i, pointer, dataPath, offset,
                                i == 0 ? 0 : i - 1));
    offset += uint64_t(length) * width;
    if (offset > dataBytes)
      return fail(llvm::formatv("sequence {0} ends at byte {1}, past the "
                                "{2} bytes of {3}",
                                i, offset, dataBytes, dataPath));
  }
  if (offset != dataBytes)
    return fail(llvm::formatv("the sequences hold {0} bytes, {1} has {2}",
                              offset, dataPath, dataBytes));
  uint64_t previous = 0;
  for (uint64_t d = 0; d < documents; ++d) {
    uint64_t first = llvm::support::endian::read64le(docs + 8 * d);
    if (first < previous || first > sequences)
      return fail(llvm::formatv("document index {0} is {1}: not between "
                                "{2} and the {3} sequences",
                                d, first, previous, sequences));
    previous = first;
  }
  TokenFile file;
  file.fileName = dataPath;
  file.ids = reinterpret_cast<const unsigned char *>((*data)->getBufferStart());
  file.file = std::shared_ptr<llvm::MemoryBuffer>(std::move(*data));
  file.count = dataBytes / width;
  file.width = width;
  return file;
}

llvm::Expected<TokenFile> TokenFile::open(llvm::StringRef path) {
  if (path.consume_front("u16:"))
    return openFlat(path, 2);
  if (path.consume_front("u32:"))
    return openFlat(path, 4);
  // A Megatron dataset: PREFIX, PREFIX.idx or PREFIX.bin with both files.
  llvm::StringRef prefix = path;
  if (path.ends_with(".idx") || path.ends_with(".bin"))
    prefix = path.drop_back(4);
  if (llvm::sys::fs::exists(prefix + ".idx") &&
      llvm::sys::fs::exists(prefix + ".bin"))
    return openMegatron(prefix);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError(llvm::formatv("{0}: cannot read the token file: {1}", path,
                                   buffer.getError().message()));
  llvm::StringRef data = (*buffer)->getBuffer();
  auto *bytes = reinterpret_cast<const unsigned char *>(data.data());
  if (data.size() < 8 || std::memcmp(bytes, kTokenFileMagic, 8) != 0)
    return makeError(llvm::formatv("{0}: not a RATrain token file (bad "
                                   "magic; make one with ratrain-tokenize); "
                                   "a flat array of ids is read as u16:{0} "
                                   "or u32:{0}, a Megatron dataset needs "
                                   "its .idx next to its .bin",
                                   path));
  if (data.size() < kTokenFileHeaderBytes)
    return makeError(llvm::formatv("{0}: truncated token file: {1} bytes, the "
                                   "header alone is {2}",
                                   path, data.size(), kTokenFileHeaderBytes));
  uint32_t version = llvm::support::endian::read32le(bytes + 8);
  if (version != kTokenFileVersion)
    return makeError(llvm::formatv("{0}: token file version {1} is not "
                                   "supported (expected {2})",
                                   path, version, kTokenFileVersion));
  uint32_t width = llvm::support::endian::read32le(bytes + 12);
  if (width != 2 && width != 4)
    return makeError(
        llvm::formatv("{0}: token width {1} is not 2 or 4 bytes", path, width));
  uint64_t count = llvm::support::endian::read64le(bytes + 16);
  uint32_t vocab = llvm::support::endian::read32le(bytes + 24);
  uint64_t payload = data.size() - kTokenFileHeaderBytes;
  if (count > payload / width || payload != count * width)
    return makeError(llvm::formatv("{0}: the header says {1} tokens of {2} "
                                   "bytes ({3} bytes), but the file holds {4} "
                                   "bytes of tokens (truncated or corrupt)",
                                   path, count, width,
                                   count > UINT64_MAX / width
                                       ? std::string("overflowing")
                                       : std::to_string(count * width),
                                   payload));
  if (vocab == 0)
    return makeError(llvm::formatv("{0}: vocabulary size is 0", path));
  TokenFile file;
  file.file = std::shared_ptr<llvm::MemoryBuffer>(std::move(*buffer));
  file.fileName = path.str();
  file.ids = bytes + kTokenFileHeaderBytes;
  file.count = count;
  file.vocabSize = vocab;
  file.width = width;
  return file;
}

uint32_t TokenFile::operator[](uint64_t index) const {
  const unsigned char *p = ids + index * width;
  return width == 2 ? llvm::support::endian::read16le(p)
                    : llvm::support::endian::read32le(p);
}

void TokenFile::read(uint64_t start, uint64_t n, uint32_t *out) const {
  for (uint64_t i = 0; i < n; ++i)
    out[i] = (*this)[start + i];
}

std::vector<uint32_t> TokenFile::all() const {
  std::vector<uint32_t> result(count);
  read(0, count, result.data());
  return result;
}

//===----------------------------------------------------------------------===//
// DataLoader
//===----------------------------------------------------------------------===//

namespace {
/// SplitMix64: a tiny, well-mixed generator whose output is the same on every
/// platform and library (unlike std::uniform_int_distribution).
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, bound) without modulo bias (rejection sampling).
  uint64_t below(uint64_t bound) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    for (;;) {
      uint64_t value = next();
      if (value < limit)
        return value % bound;
    }
  }
};
} // namespace

DataLoader::DataLoader(TokenFile file, Options options, uint64_t windows)
    : file(std::move(file)), opts(options), numWindows(windows) {
  scratch.resize(windowTokens());
}

llvm::Expected<DataLoader> DataLoader::create(TokenFile file, Options options) {
  if (options.seqLen <= 0)
    return makeError(llvm::formatv("data loader: sequence length must be "
                                   "positive, got {0}",
                                   options.seqLen));
  if (options.microBatch <= 0)
    return makeError(llvm::formatv("data loader: micro-batch must be "
                                   "positive, got {0}",
                                   options.microBatch));
  if (options.dpSize <= 0 || options.dpIndex < 0 ||
      options.dpIndex >= options.dpSize)
    return makeError(llvm::formatv("data loader: data-parallel index {0} is "
                                   "not in [0, {1})",
                                   options.dpIndex, options.dpSize));
  uint64_t windows =
      file.size() == 0 ? 0 : (file.size() - 1) / uint64_t(options.seqLen);
  if (options.firstWindow > windows ||
      options.windowCount > windows - options.firstWindow)
    return makeError(llvm::formatv(
        "{0}: windows [{1}, +{2}) are not among its {3} windows of {4}+1 "
        "tokens",
        file.path(), options.firstWindow, options.windowCount, windows,
        options.seqLen));
  windows =
      options.windowCount ? options.windowCount : windows - options.firstWindow;
  uint64_t needed = uint64_t(options.dpSize) * uint64_t(options.microBatch);
  if (windows < needed)
    return makeError(llvm::formatv(
        "{0}: {1} tokens make {2} windows of {3}+1 tokens, fewer than one "
        "micro-batch across the data-parallel group ({4} x {5})",
        file.path(), file.size(), windows, options.seqLen, options.dpSize,
        options.microBatch));
  if (!options.replicaMicroBatches.empty() &&
      int64_t(options.replicaMicroBatches.size()) != int64_t(options.dpSize))
    return makeError(llvm::formatv("data loader: {0} replica shares for a "
                                   "data-parallel group of {1}",
                                   options.replicaMicroBatches.size(),
                                   options.dpSize));
  for (int64_t m : options.replicaMicroBatches)
    if (m < 1)
      return makeError(llvm::formatv(
          "data loader: a replica share of {0} micro-batches (at least 1)", m));
  return DataLoader(std::move(file), options, windows);
}

void DataLoader::preparePermutation(uint64_t epoch) {
  if (permutationEpoch == epoch)
    return;
  permutation.resize(numWindows);
  for (uint64_t i = 0; i < numWindows; ++i)
    permutation[i] = i;
  SplitMix64 random{opts.seed ^ (0xd1b54a32d192ed03ull * (epoch + 1))};
  for (uint64_t i = numWindows; i > 1; --i)
    std::swap(permutation[i - 1], permutation[random.below(i)]);
  permutationEpoch = epoch;
}

uint64_t DataLoader::windowOfSample(uint64_t sample) {
  preparePermutation(sample / numWindows);
  return opts.firstWindow + permutation[sample % numWindows];
}

void DataLoader::readWindow(uint64_t window) {
  uint64_t start = window * uint64_t(opts.seqLen);
  file.read(start, windowTokens(), scratch.data());
  if (!opts.vocabLimit)
    return;
  for (uint64_t i = 0; i < windowTokens(); ++i)
    if (scratch[i] >= opts.vocabLimit)
      fatal(llvm::formatv("{0}: token id {1} at position {2} is not below "
                          "the model's vocab_size {3}",
                          file.path(),
                          int64_t(int32_t(scratch[i])) < 0
                              ? int64_t(int32_t(scratch[i]))
                              : int64_t(scratch[i]),
                          start + i, opts.vocabLimit));
}

void DataLoader::next(int32_t *out) {
  uint64_t base = pos.samples + uint64_t(opts.dpIndex) * opts.microBatch;
  uint64_t width = windowTokens();
  for (int64_t row = 0; row < opts.microBatch; ++row) {
    uint64_t window = windowOfSample(base + uint64_t(row));
    readWindow(window);
    for (uint64_t i = 0; i < width; ++i)
      out[uint64_t(row) * width + i] = int32_t(scratch[i]);
  }
  pos.samples += uint64_t(opts.dpSize) * uint64_t(opts.microBatch);
}

void DataLoader::next(Buffer out) {
  if (out.bytes < microBatchBytes())
    fatal(llvm::formatv("data loader: the batch buffer {0}[{1}, +{2}) is "
                        "smaller than one micro-batch ({3} bytes)",
                        stringifyMemorySpace(out.space), out.offset, out.bytes,
                        microBatchBytes()));
  next(out.as<int32_t>());
}

uint64_t DataLoader::globalMicroBatch(int64_t microBatch) const {
  if (opts.replicaMicroBatches.empty())
    return uint64_t(microBatch) * uint64_t(opts.dpSize) +
           uint64_t(opts.dpIndex);
  // Round-robin over the replicas that still have a micro-batch: before
  // round `microBatch` every replica dealt min(share, microBatch), then the
  // lower replicas whose share reaches this round deal theirs.
  uint64_t index = 0;
  for (int r = 0; r < opts.dpSize; ++r) {
    int64_t share = opts.replicaMicroBatches[size_t(r)];
    index += uint64_t(std::min(share, microBatch));
    if (r < opts.dpIndex && share > microBatch)
      ++index;
  }
  return index;
}

void DataLoader::fill(DataPosition stepStart, int64_t microBatch,
                      BatchField field, int32_t *out) {
  uint64_t base = stepStart.samples +
                  globalMicroBatch(microBatch) * uint64_t(opts.microBatch);
  uint64_t seq = uint64_t(opts.seqLen);
  uint64_t first = field == BatchField::Inputs ? 0 : 1;
  for (int64_t row = 0; row < opts.microBatch; ++row) {
    uint64_t window = windowOfSample(base + uint64_t(row));
    readWindow(window);
    for (uint64_t i = 0; i < seq; ++i)
      out[uint64_t(row) * seq + i] = int32_t(scratch[first + i]);
  }
}

void DataLoader::fill(DataPosition stepStart, int64_t microBatch,
                      BatchField field, Buffer out) {
  if (out.bytes < fieldBytes())
    fatal(llvm::formatv("load_batch: the buffer {0}[{1}, +{2}) is smaller "
                        "than one micro-batch field ({3} bytes)",
                        stringifyMemorySpace(out.space), out.offset, out.bytes,
                        fieldBytes()));
  fill(stepStart, microBatch, field, out.as<int32_t>());
}
