//===- SentencePieceTokenizer.cpp - A SentencePiece model -----------------===//
//
// Encodes and decodes through Debian's libsentencepiece. The vocabulary is
// the model's piece count. The model file is read here (so that a missing
// file reads "cannot read" like every other input) and handed to
// SentencePiece as a serialized proto.
//
//===----------------------------------------------------------------------===//

#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/Tokenizer.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <sentencepiece_processor.h>

using namespace ratrain::rt;

namespace {
class SentencePieceTokenizer : public Tokenizer {
public:
  llvm::Expected<std::vector<uint32_t>> encode(llvm::StringRef text) override;
  llvm::Expected<std::string> decode(llvm::ArrayRef<uint32_t> ids) override;
  uint32_t vocabSize() const override { return vocab; }
  llvm::StringRef kind() const override { return "SentencePiece"; }

  sentencepiece::SentencePieceProcessor processor;
  uint32_t vocab = 0;
};
} // namespace

llvm::Expected<std::vector<uint32_t>>
SentencePieceTokenizer::encode(llvm::StringRef text) {
  if (std::optional<size_t> bad = findInvalidUTF8(text))
    return makeError(
        llvm::formatv("the text is not valid UTF-8 (byte {0})", *bad));
  std::vector<int> pieces;
  sentencepiece::util::Status status =
      processor.Encode(std::string_view(text.data(), text.size()), &pieces);
  if (!status.ok())
    return makeError(llvm::Twine("SentencePiece cannot encode the text: ") +
                     status.ToString());
  std::vector<uint32_t> ids(pieces.begin(), pieces.end());
  return ids;
}

llvm::Expected<std::string>
SentencePieceTokenizer::decode(llvm::ArrayRef<uint32_t> ids) {
  std::vector<int> pieces(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= vocab)
      return makeError(llvm::formatv("token {0} at position {1} is not in "
                                     "the SentencePiece vocabulary of {2}",
                                     ids[i], i, vocab));
    pieces[i] = int(ids[i]);
  }
  std::string text;
  sentencepiece::util::Status status = processor.Decode(pieces, &text);
  if (!status.ok())
    return makeError(llvm::Twine("SentencePiece cannot decode the ids: ") +
                     status.ToString());
  return text;
}

llvm::Expected<std::unique_ptr<Tokenizer>>
ratrain::rt::loadSentencePieceTokenizer(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError(llvm::formatv("{0}: cannot read: {1}", path,
                                   buffer.getError().message()));
  auto tokenizer = std::make_unique<SentencePieceTokenizer>();
  llvm::StringRef bytes = (*buffer)->getBuffer();
  sentencepiece::util::Status status =
      tokenizer->processor.LoadFromSerializedProto(
          std::string_view(bytes.data(), bytes.size()));
  if (!status.ok()) {
    // SentencePiece names its source line for a proto that does not parse.
    std::string what = status.message();
    if (what.find("ParseFromArray") != std::string::npos)
      what = "the protobuf does not parse";
    return makeError(
        llvm::formatv("{0}: not a SentencePiece model: {1}", path, what));
  }
  int pieces = tokenizer->processor.GetPieceSize();
  if (pieces <= 0)
    return makeError(llvm::formatv("{0}: the SentencePiece model has no "
                                   "pieces",
                                   path));
  tokenizer->vocab = uint32_t(pieces);
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}
