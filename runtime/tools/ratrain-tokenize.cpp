//===- ratrain-tokenize.cpp - Text files <-> token files ------------------===//
//
// Turns text files into a RATrain token file and back, with the byte-level
// tokenizer (one id per byte, vocabulary 256, the tiny-llama vocabulary), a
// SentencePiece model or a HuggingFace byte-level BPE tokenizer.json
// (ratrain/runtime/Tokenizer.h):
//   ratrain-tokenize -o corpus.tok a.txt b.txt   # concatenates the files
//   ratrain-tokenize --sentencepiece tokenizer.model -o corpus.tok a.txt
//   ratrain-tokenize --tokenizer tokenizer.json -o corpus.tok a.txt
//   ratrain-tokenize --decode corpus.tok -o corpus.txt [--tokenizer ...]
//   ratrain-tokenize --info corpus.tok
// Files are joined with a newline when one does not end in one. The
// vocabulary of the token file is the tokenizer's; ids are 2 bytes wide when
// it fits 65536, else 4 (--width). Errors print `error: <file>: <what>` and
// exit 1; the output is written atomically, and not at all on an error.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Support/CrashReport.h"
#include "ratrain/runtime/Data.h"
#include "ratrain/runtime/FileIO.h"
#include "ratrain/runtime/Tokenizer.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace ratrain::rt;

namespace {
llvm::cl::list<std::string> inputs(llvm::cl::Positional,
                                   llvm::cl::desc("<text files | token file>"));
llvm::cl::opt<std::string> output("o", llvm::cl::desc("Output file"),
                                  llvm::cl::value_desc("path"));
llvm::cl::opt<bool> decode("decode",
                           llvm::cl::desc("Token file -> text (to -o or "
                                          "stdout)"));
llvm::cl::opt<bool> info("info", llvm::cl::desc("Print a token file's "
                                                "header"));
llvm::cl::opt<unsigned>
    width("width",
          llvm::cl::desc("Bytes per token id: 2 or 4 (default: 2 when the "
                         "vocabulary fits 65536 ids, else 4)"),
          llvm::cl::init(2));
llvm::cl::opt<std::string>
    sentencePiece("sentencepiece",
                  llvm::cl::desc("Tokenize with a SentencePiece model"),
                  llvm::cl::value_desc("MODEL.model"));
llvm::cl::opt<std::string> hfTokenizer(
    "tokenizer",
    llvm::cl::desc("Tokenize with a HuggingFace byte-level BPE tokenizer"),
    llvm::cl::value_desc("tokenizer.json"));

int fail(const llvm::Twine &message) {
  llvm::errs() << "error: " << message << "\n";
  return 1;
}

int failWith(llvm::Error error) {
  return fail(llvm::toString(std::move(error)));
}
} // namespace

int main(int argc, char **argv) {
  ratrain::InitTool init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "RATrain tokenizer: text files <-> token "
                                    "files\n");
  if (inputs.empty())
    return fail("no input files (see --help)");
  if (!sentencePiece.empty() && !hfTokenizer.empty())
    return fail("--sentencepiece and --tokenizer exclude each other");

  if (info) {
    if (inputs.size() != 1)
      return fail("--info and --decode take exactly one token file");
    auto file = TokenFile::open(inputs[0]);
    if (!file)
      return failWith(file.takeError());
    llvm::outs() << llvm::formatv("{0}: {1} tokens, {2} bytes per id, "
                                  "vocabulary {3}\n",
                                  inputs[0], file->size(),
                                  file->bytesPerToken(), file->vocab());
    return 0;
  }

  TokenizerKind kind = TokenizerKind::Bytes;
  std::string tokenizerPath;
  if (!sentencePiece.empty()) {
    kind = TokenizerKind::SentencePiece;
    tokenizerPath = sentencePiece;
  } else if (!hfTokenizer.empty()) {
    kind = TokenizerKind::HFJson;
    tokenizerPath = hfTokenizer;
  }
  auto loaded = loadTokenizer(kind, tokenizerPath);
  if (!loaded)
    return failWith(loaded.takeError());
  Tokenizer &tokenizer = **loaded;
  uint32_t vocab = tokenizer.vocabSize();

  if (decode) {
    if (inputs.size() != 1)
      return fail("--info and --decode take exactly one token file");
    auto file = TokenFile::open(inputs[0]);
    if (!file)
      return failWith(file.takeError());
    if (kind != TokenizerKind::Bytes && file->vocab() != 0 &&
        file->vocab() != vocab)
      return fail(llvm::formatv("{0}: the token file's vocabulary is {1}, "
                                "the tokenizer's ({2}) {3}: decode with the "
                                "tokenizer that wrote it",
                                inputs[0], file->vocab(), tokenizerPath,
                                vocab));
    auto text = tokenizer.decode(file->all());
    if (!text)
      return fail(inputs[0] + ": " + llvm::toString(text.takeError()));
    if (output.empty()) {
      llvm::outs() << *text;
      return 0;
    }
    if (llvm::Error error = writeFileAtomically(output, *text))
      return failWith(std::move(error));
    return 0;
  }

  if (output.empty())
    return fail("no output file (-o)");
  unsigned bytesPerToken = width;
  if (bytesPerToken != 2 && bytesPerToken != 4)
    return fail(llvm::formatv("--width {0}: token ids are 2 or 4 bytes wide",
                              bytesPerToken));
  if (vocab > 65536) {
    if (width.getNumOccurrences() && bytesPerToken == 2)
      return fail(llvm::formatv("{0}: the vocabulary of {1} ids does not fit "
                                "2-byte token ids (at most 65536); use "
                                "--width 4",
                                tokenizerPath, vocab));
    bytesPerToken = 4;
  }
  std::string text;
  for (const std::string &input : inputs) {
    auto buffer = llvm::MemoryBuffer::getFile(input, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      return fail(input + ": cannot read: " + buffer.getError().message());
    llvm::StringRef contents = (*buffer)->getBuffer();
    if (tokenizer.readsUTF8())
      if (std::optional<size_t> bad = findInvalidUTF8(contents))
        return fail(llvm::formatv("{0}: not valid UTF-8 at byte {1} (the {2} "
                                  "tokenizer reads UTF-8 text)",
                                  input, *bad, tokenizer.kind()));
    if (!text.empty() && text.back() != '\n')
      text.push_back('\n');
    text.append(contents.begin(), contents.end());
  }
  if (text.empty())
    return fail("the input files are empty");
  auto ids = tokenizer.encode(text);
  if (!ids)
    return fail(tokenizerPath + ": " + llvm::toString(ids.takeError()));
  if (llvm::Error error = writeTokenFile(output, *ids, vocab, bytesPerToken))
    return failWith(std::move(error));
  llvm::outs() << llvm::formatv("{0}: {1} tokens from {2} files\n", output,
                                ids->size(), inputs.size());
  return 0;
}
