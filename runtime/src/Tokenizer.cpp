//===- Tokenizer.cpp - Tokenizer factory and UTF-8 check ------------------===//

#include "ratrain/runtime/Tokenizer.h"

#include "llvm/Support/ConvertUTF.h"

using namespace ratrain::rt;

Tokenizer::~Tokenizer() = default;

llvm::Expected<std::unique_ptr<Tokenizer>>
ratrain::rt::loadTokenizer(TokenizerKind kind, llvm::StringRef path) {
  switch (kind) {
  case TokenizerKind::Bytes:
    return makeByteTokenizer();
  case TokenizerKind::SentencePiece:
    return loadSentencePieceTokenizer(path);
  case TokenizerKind::HFJson:
    return loadHFTokenizer(path);
  }
  llvm_unreachable("unknown tokenizer kind");
}

std::optional<size_t> ratrain::rt::findInvalidUTF8(llvm::StringRef text) {
  const auto *begin = reinterpret_cast<const llvm::UTF8 *>(text.data());
  const llvm::UTF8 *cursor = begin;
  if (llvm::isLegalUTF8String(&cursor, begin + text.size()))
    return std::nullopt;
  return size_t(cursor - begin);
}
