//===- ByteTokenizer.cpp - Byte b -> id b ---------------------------------===//

#include "ratrain/runtime/Data.h"
#include "ratrain/runtime/Tokenizer.h"

using namespace ratrain::rt;

namespace {
/// The byte-level tokenizer of Data.h behind the Tokenizer interface.
class ByteTokenizer : public Tokenizer {
public:
  llvm::Expected<std::vector<uint32_t>> encode(llvm::StringRef text) override {
    return tokenizeBytes(text);
  }
  llvm::Expected<std::string> decode(llvm::ArrayRef<uint32_t> ids) override {
    return detokenizeBytes(ids);
  }
  uint32_t vocabSize() const override { return kByteVocab; }
  llvm::StringRef kind() const override { return "byte-level"; }
  bool readsUTF8() const override { return false; }
};
} // namespace

std::unique_ptr<Tokenizer> ratrain::rt::makeByteTokenizer() {
  return std::make_unique<ByteTokenizer>();
}
