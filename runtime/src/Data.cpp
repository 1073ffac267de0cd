//===- Data.cpp - Token files, byte-level tokenizer, data loader ----------===//

#include "ratrain/runtime/Data.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/FileIO.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"

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

llvm::Expected<TokenFile> TokenFile::open(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError(llvm::formatv("{0}: cannot read the token file: {1}", path,
                                   buffer.getError().message()));
  llvm::StringRef data = (*buffer)->getBuffer();
  if (data.size() < kTokenFileHeaderBytes)
    return makeError(llvm::formatv("{0}: truncated token file: {1} bytes, the "
                                   "header alone is {2}",
                                   path, data.size(), kTokenFileHeaderBytes));
  auto *bytes = reinterpret_cast<const unsigned char *>(data.data());
  if (std::memcmp(bytes, kTokenFileMagic, 8) != 0)
    return makeError(llvm::formatv("{0}: not a RATrain token file (bad "
                                   "magic; make one with ratrain-tokenize)",
                                   path));
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
  uint64_t needed = uint64_t(options.dpSize) * uint64_t(options.microBatch);
  if (windows < needed)
    return makeError(llvm::formatv(
        "{0}: {1} tokens make {2} windows of {3}+1 tokens, fewer than one "
        "micro-batch across the data-parallel group ({4} x {5})",
        file.path(), file.size(), windows, options.seqLen, options.dpSize,
        options.microBatch));
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
  return permutation[sample % numWindows];
}

void DataLoader::next(int32_t *out) {
  uint64_t base = pos.samples + uint64_t(opts.dpIndex) * opts.microBatch;
  uint64_t width = windowTokens();
  for (int64_t row = 0; row < opts.microBatch; ++row) {
    uint64_t window = windowOfSample(base + uint64_t(row));
    file.read(window * uint64_t(opts.seqLen), width, scratch.data());
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

void DataLoader::fill(DataPosition stepStart, int64_t microBatch,
                      BatchField field, int32_t *out) {
  uint64_t base =
      stepStart.samples +
      uint64_t(microBatch) * uint64_t(opts.dpSize) * uint64_t(opts.microBatch) +
      uint64_t(opts.dpIndex) * uint64_t(opts.microBatch);
  uint64_t seq = uint64_t(opts.seqLen);
  uint64_t first = field == BatchField::Inputs ? 0 : 1;
  for (int64_t row = 0; row < opts.microBatch; ++row) {
    uint64_t window = windowOfSample(base + uint64_t(row));
    file.read(window * seq, windowTokens(), scratch.data());
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
