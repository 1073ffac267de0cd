//===- safetensors.cpp - fuzz the safetensors reader ----------------------===//
//
// Input: a whole .safetensors file. SafetensorsFile::open must accept it or
// return an error; every tensor of an accepted file is read back (checksums
// verified where recorded).
//
//===----------------------------------------------------------------------===//

#include "ratrain/runtime/Safetensors.h"
#include "FuzzUtil.h"

#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path =
      ratrain::fuzz::writeScratchFile(data, size, "safetensors");
  llvm::Expected<ratrain::rt::SafetensorsFile> file =
      ratrain::rt::SafetensorsFile::open(path);
  if (!file) {
    llvm::consumeError(file.takeError());
    return 0;
  }
  std::vector<char> out;
  for (const ratrain::rt::TensorInfo &info : file->tensors()) {
    llvm::StringRef bytes = file->data(info);
    out.assign(bytes.size(), 0);
    if (llvm::Error err = file->read(info.name, info.dtype, info.shape,
                                     out.data(), out.size()))
      llvm::consumeError(std::move(err));
  }
  return 0;
}
