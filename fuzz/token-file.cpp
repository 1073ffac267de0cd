//===- token-file.cpp - fuzz the token-file reader and data loader --------===//
//
// Input: a whole token file. TokenFile::open must accept it or return an
// error; an accepted file is read in full and, with options taken from its
// size, cut into a few micro-batches by the data loader.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"
#include "ratrain/runtime/Data.h"

#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = ratrain::fuzz::writeScratchFile(data, size, "tok");
  llvm::Expected<ratrain::rt::TokenFile> file =
      ratrain::rt::TokenFile::open(path);
  if (!file) {
    llvm::consumeError(file.takeError());
    return 0;
  }
  std::vector<uint32_t> ids = file->all();
  if (ids.size() != file->size())
    __builtin_trap();
  ratrain::rt::DataLoader::Options options;
  options.seqLen = 1 + int64_t(file->size() % 7);
  options.microBatch = 1 + int64_t(file->size() % 2);
  llvm::Expected<ratrain::rt::DataLoader> loader =
      ratrain::rt::DataLoader::create(std::move(*file), options);
  if (!loader) {
    llvm::consumeError(loader.takeError());
    return 0;
  }
  std::vector<int32_t> batch(loader->microBatchBytes() / 4);
  for (int i = 0; i < 3; ++i)
    loader->next(ratrain::rt::Buffer{
        reinterpret_cast<std::byte *>(batch.data()), 0, batch.size() * 4});
  return 0;
}
