//===- ratrain-tokenize.cpp - Byte-level tokenizer ------------------------===//
//
// Turns text files into a RATrain token file (one id per byte, vocabulary
// 256, the tiny-llama vocabulary) and back:
//   ratrain-tokenize -o corpus.tok a.txt b.txt   # concatenates the files
//   ratrain-tokenize --decode corpus.tok -o corpus.txt
//   ratrain-tokenize --info corpus.tok
// Files are joined with a newline when one does not end in one. Errors print
// `error: <file>: <what>` and exit 1; the output is written atomically.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Support/CrashReport.h"
#include "ratrain/runtime/Data.h"
#include "ratrain/runtime/FileIO.h"

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
llvm::cl::opt<unsigned> width("width",
                              llvm::cl::desc("Bytes per token id: 2 or 4"),
                              llvm::cl::init(2));

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
                                    "RATrain byte-level tokenizer\n");
  if (inputs.empty())
    return fail("no input files (see --help)");

  if (info || decode) {
    if (inputs.size() != 1)
      return fail("--info and --decode take exactly one token file");
    auto file = TokenFile::open(inputs[0]);
    if (!file)
      return failWith(file.takeError());
    if (info) {
      llvm::outs() << llvm::formatv("{0}: {1} tokens, {2} bytes per id, "
                                    "vocabulary {3}\n",
                                    inputs[0], file->size(),
                                    file->bytesPerToken(), file->vocab());
      return 0;
    }
    auto text = detokenizeBytes(file->all());
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
  std::string text;
  for (const std::string &input : inputs) {
    auto buffer = llvm::MemoryBuffer::getFile(input, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      return fail(input + ": cannot read: " + buffer.getError().message());
    llvm::StringRef contents = (*buffer)->getBuffer();
    if (!text.empty() && text.back() != '\n')
      text.push_back('\n');
    text.append(contents.begin(), contents.end());
  }
  if (text.empty())
    return fail("the input files are empty");
  if (llvm::Error error =
          writeTokenFile(output, tokenizeBytes(text), kByteVocab, width))
    return failWith(std::move(error));
  llvm::outs() << llvm::formatv("{0}: {1} tokens from {2} files\n", output,
                                text.size(), inputs.size());
  return 0;
}
