//===- Tokenizer.h - Text <-> token ids for the training data ---*- C++ -*-===//
//
// The tokenizers ratrain-tokenize turns text files into token files with:
//  - byte-level: byte b -> id b, vocabulary 256 (tokenizeBytes, Data.h);
//  - SentencePiece: a `.model` file, through libsentencepiece
//    (SentencePieceTokenizer.cpp);
//  - HuggingFace byte-level BPE: a `tokenizer.json` with a BPE model and a
//    ByteLevel pre-tokenizer, alone (GPT-2) or after regex Splits (Llama-3,
//    Qwen2 layout; Qwen2 itself needs NFC, which is refused), in C++ with
//    PCRE2 for the regexes (BPETokenizer.cpp).
// They live in the library ratrain_tokenizers, apart from
// ratrain_runtime_core: emitted programs link the core, and must not need
// libsentencepiece or libpcre2 on a compute node.
//
// encode() is HuggingFace's `encode(text, add_special_tokens=False)`: the
// special tokens written in the text become their ids, none is added around
// it (a post_processor is not applied).
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_TOKENIZER_H
#define RATRAIN_RUNTIME_TOKENIZER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ratrain::rt {

/// Text to token ids and back. Errors carry no file name; the caller adds it.
class Tokenizer {
public:
  virtual ~Tokenizer();

  /// The ids of `text`. Tokenizers that read UTF-8 (readsUTF8()) refuse
  /// text that is not valid UTF-8, naming the byte offset.
  virtual llvm::Expected<std::vector<uint32_t>>
  encode(llvm::StringRef text) = 0;
  /// The text of `ids`; an id outside the vocabulary is an error naming it
  /// and its position.
  virtual llvm::Expected<std::string> decode(llvm::ArrayRef<uint32_t> ids) = 0;
  /// Every id encode() returns is below it.
  virtual uint32_t vocabSize() const = 0;
  /// What it is, for messages: "byte-level", "SentencePiece", "BPE".
  virtual llvm::StringRef kind() const = 0;
  /// Whether encode() takes UTF-8 text only.
  virtual bool readsUTF8() const { return true; }
};

/// The byte-level tokenizer (vocabulary 256): decode(encode(s)) == s for
/// any bytes.
std::unique_ptr<Tokenizer> makeByteTokenizer();

/// A SentencePiece model (`.model`, a serialized ModelProto). Errors name
/// the file ("cannot read", or what SentencePiece says is wrong with it).
llvm::Expected<std::unique_ptr<Tokenizer>>
loadSentencePieceTokenizer(llvm::StringRef path);

/// A HuggingFace `tokenizer.json` with a byte-level BPE model. Errors name
/// the file and the field ("model.type: WordPiece is not supported").
llvm::Expected<std::unique_ptr<Tokenizer>>
loadHFTokenizer(llvm::StringRef path);
/// Same from a parsed document; `name` is put before every error message.
llvm::Expected<std::unique_ptr<Tokenizer>>
parseHFTokenizer(const llvm::json::Value &document, llvm::StringRef name);

enum class TokenizerKind { Bytes, SentencePiece, HFJson };

/// The factory ratrain-tokenize uses: makeByteTokenizer() for Bytes (the
/// path is ignored), otherwise the loader of `kind`.
llvm::Expected<std::unique_ptr<Tokenizer>> loadTokenizer(TokenizerKind kind,
                                                         llvm::StringRef path);

/// The byte offset of the first byte of `text` that does not start a valid
/// UTF-8 sequence (overlong forms, surrogates and code points above
/// U+10FFFF are invalid), or nullopt when all of it is valid.
std::optional<size_t> findInvalidUTF8(llvm::StringRef text);

} // namespace ratrain::rt

#endif // RATRAIN_RUNTIME_TOKENIZER_H
