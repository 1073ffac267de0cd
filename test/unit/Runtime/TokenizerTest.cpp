//===- TokenizerTest.cpp - SentencePiece and HF byte-level BPE ------------===//
//
// The reference ids in test/data/tokenizers/*.reference.json come from
// python3-sentencepiece and from an independent Python implementation of
// OpenAI's GPT-2 encoder (test/data/tokenizers/reference.py).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "ratrain/runtime/Data.h"
#include "ratrain/runtime/FileIO.h"
#include "ratrain/runtime/Tokenizer.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include "gtest/gtest.h"

#include <fstream>
#include <functional>

using namespace ratrain::rt;
using namespace ratrain::rt::test;
using llvm::json::Array;
using llvm::json::Object;
using llvm::json::Value;

namespace {
std::string dataPath(llvm::StringRef name) {
  return (llvm::Twine(RATRAIN_TOKENIZER_DATA) + "/" + name).str();
}

void writeRaw(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string readRaw(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

struct Case {
  std::string text;
  std::vector<uint32_t> ids;
};

std::vector<Case> readReference(llvm::StringRef name) {
  std::vector<Case> cases;
  auto document = readJSONFile(dataPath(name));
  EXPECT_TRUE(bool(document)) << llvm::toString(document.takeError());
  if (!document)
    return cases;
  for (const Value &item : *document->getAsArray()) {
    const Object &object = *item.getAsObject();
    Case c;
    c.text = object.getString("text")->str();
    for (const Value &id : *object.getArray("ids"))
      c.ids.push_back(uint32_t(*id.getAsInteger()));
    cases.push_back(std::move(c));
  }
  return cases;
}

/// Encodes every reference string and decodes the ids back.
void expectReference(Tokenizer &tokenizer, llvm::StringRef reference) {
  std::vector<Case> cases = readReference(reference);
  ASSERT_GE(cases.size(), 8u) << reference.str();
  for (const Case &c : cases) {
    auto ids = tokenizer.encode(c.text);
    ASSERT_TRUE(bool(ids)) << llvm::toString(ids.takeError());
    EXPECT_EQ(*ids, c.ids) << reference.str() << ": \"" << c.text << "\"";
    auto text = tokenizer.decode(c.ids);
    ASSERT_TRUE(bool(text)) << llvm::toString(text.takeError());
    EXPECT_EQ(*text, c.text) << reference.str();
  }
}

std::unique_ptr<Tokenizer> load(TokenizerKind kind, llvm::StringRef name) {
  auto tokenizer = loadTokenizer(kind, dataPath(name));
  EXPECT_TRUE(bool(tokenizer)) << llvm::toString(tokenizer.takeError());
  return tokenizer ? std::move(*tokenizer) : nullptr;
}

Value readDocument(llvm::StringRef name) {
  auto document = readJSONFile(dataPath(name));
  EXPECT_TRUE(bool(document)) << llvm::toString(document.takeError());
  return document ? std::move(*document) : Value(nullptr);
}

Object &model(Value &document) {
  return *document.getAsObject()->getObject("model");
}

/// The error parseHFTokenizer gives for gpt2.tokenizer.json (or
/// llama3.tokenizer.json) changed by `edit`, or "".
std::string errorOfEdited(const std::function<void(Value &)> &edit,
                          llvm::StringRef base = "gpt2.tokenizer.json") {
  Value document = readDocument(base);
  edit(document);
  auto tokenizer = parseHFTokenizer(document, "t.json");
  return tokenizer ? std::string() : llvm::toString(tokenizer.takeError());
}
} // namespace

TEST(Tokenizer, SentencePieceMatchesPythonSentencePiece) {
  auto tokenizer = load(TokenizerKind::SentencePiece, "spm.model");
  ASSERT_TRUE(tokenizer);
  EXPECT_EQ(tokenizer->vocabSize(), 800u);
  EXPECT_EQ(tokenizer->kind(), "SentencePiece");
  expectReference(*tokenizer, "spm.reference.json");
}

TEST(Tokenizer, GPT2StyleBPEMatchesTheReferenceEncoder) {
  auto tokenizer = load(TokenizerKind::HFJson, "gpt2.tokenizer.json");
  ASSERT_TRUE(tokenizer);
  // 256 bytes, 500 merges, <|endoftext|>.
  EXPECT_EQ(tokenizer->vocabSize(), 757u);
  expectReference(*tokenizer, "gpt2.reference.json");
}

TEST(Tokenizer, Llama3StyleBPEMatchesTheReferenceEncoder) {
  auto tokenizer = load(TokenizerKind::HFJson, "llama3.tokenizer.json");
  ASSERT_TRUE(tokenizer);
  // 756 tokens, two whole words, four special tokens after the vocab.
  EXPECT_EQ(tokenizer->vocabSize(), 762u);
  expectReference(*tokenizer, "llama3.reference.json");
  // ignore_merges: the words no merge builds are single tokens.
  auto ids = tokenizer->encode(" RATrain tokenizer");
  ASSERT_TRUE(bool(ids));
  EXPECT_EQ(*ids, (std::vector<uint32_t>{756, 757}));
}

TEST(Tokenizer, BPEMergeFormsPrefixSpaceAndMissingIds) {
  // The merges as ["a", "b"] pairs give the same ids as "a b" strings.
  Value document = readDocument("gpt2.tokenizer.json");
  Array pairs;
  for (const Value &merge : *model(document).getArray("merges")) {
    auto [left, right] = merge.getAsString()->split(' ');
    pairs.push_back(Array{left.str(), right.str()});
  }
  model(document)["merges"] = std::move(pairs);
  auto asPairs = parseHFTokenizer(document, "pairs.json");
  ASSERT_TRUE(bool(asPairs)) << llvm::toString(asPairs.takeError());
  expectReference(**asPairs, "gpt2.reference.json");

  // add_prefix_space: "Hello" reads as " Hello", and " Hello" stays so;
  // each piece between special tokens gets its own space.
  auto plain = load(TokenizerKind::HFJson, "gpt2.tokenizer.json");
  ASSERT_TRUE(plain);
  (*document.getAsObject()->getObject("pre_tokenizer"))["add_prefix_space"] =
      true;
  auto prefixed = parseHFTokenizer(document, "prefix.json");
  ASSERT_TRUE(bool(prefixed)) << llvm::toString(prefixed.takeError());
  auto expected = plain->encode(" Hello world");
  ASSERT_TRUE(bool(expected));
  EXPECT_EQ(*(*prefixed)->encode("Hello world"), *expected);
  EXPECT_EQ(*(*prefixed)->encode(" Hello world"), *expected);
  std::vector<uint32_t> twice = *expected;
  twice.push_back(756); // <|endoftext|>
  twice.insert(twice.end(), expected->begin(), expected->end());
  EXPECT_EQ(*(*prefixed)->encode("Hello world<|endoftext|>Hello world"), twice);
  EXPECT_EQ((*prefixed)->encode("")->size(), 0u);

  // StarCoder's layout: Digits(individual_digits) before ByteLevel.
  Value digits = readDocument("gpt2.tokenizer.json");
  (*digits.getAsObject())["pre_tokenizer"] =
      Object{{"type", "Sequence"},
             {"pretokenizers",
              Array{Object{{"type", "Digits"}, {"individual_digits", true}},
                    *digits.getAsObject()->get("pre_tokenizer")}}};
  auto starCoder = parseHFTokenizer(digits, "digits.json");
  ASSERT_TRUE(bool(starCoder)) << llvm::toString(starCoder.takeError());
  std::vector<uint32_t> split;
  for (const char *piece : {"abc", " ", "1", "2", "3", "4", "5", "x"}) {
    auto ids = plain->encode(piece);
    split.insert(split.end(), ids->begin(), ids->end());
  }
  EXPECT_EQ(*(*starCoder)->encode("abc 12345x"), split);

  // Ids outside the vocabulary, and text that is not UTF-8.
  for (const char *name : {"gpt2.tokenizer.json", "spm.model"}) {
    auto tokenizer = load(llvm::StringRef(name).ends_with(".json")
                              ? TokenizerKind::HFJson
                              : TokenizerKind::SentencePiece,
                          name);
    ASSERT_TRUE(tokenizer);
    auto bad = tokenizer->decode({1, 2, 5000});
    ASSERT_FALSE(bool(bad));
    EXPECT_NE(llvm::toString(bad.takeError())
                  .find("token 5000 at position 2 is not in the"),
              std::string::npos)
        << name;
    auto notUTF8 = tokenizer->encode("ok \xff\xfe");
    ASSERT_FALSE(bool(notUTF8));
    EXPECT_EQ(llvm::toString(notUTF8.takeError()),
              "the text is not valid UTF-8 (byte 3)");
  }
}

TEST(Tokenizer, ByteLevelBehindTheInterface) {
  auto bytes = load(TokenizerKind::Bytes, "");
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->vocabSize(), 256u);
  EXPECT_FALSE(bytes->readsUTF8());
  std::string text = "any \xff bytes";
  EXPECT_EQ(*bytes->encode(text), tokenizeBytes(text));
  EXPECT_EQ(*bytes->decode(tokenizeBytes(text)), text);
  EXPECT_EQ(findInvalidUTF8("caf\xc3\xa9"), std::nullopt);
  EXPECT_EQ(findInvalidUTF8("ab\xc0\xaf"), std::optional<size_t>(2));
  EXPECT_EQ(findInvalidUTF8("\xed\xa0\x80"), std::optional<size_t>(0));
}

TEST(Tokenizer, RejectsBadTokenizerFiles) {
  auto expectError = [](const std::string &error, const std::string &part) {
    EXPECT_NE(error.find(part), std::string::npos)
        << "expected \"" << part << "\" in \"" << error << "\"";
  };
  auto removeModelField = [](const char *field) {
    return [field](Value &d) { model(d).erase(field); };
  };
  auto setModelField = [](const char *field, Value value) {
    return [field, value](Value &d) { model(d)[field] = value; };
  };
  auto setField = [](const char *field, Value value) {
    return [field, value](Value &d) { (*d.getAsObject())[field] = value; };
  };
  EXPECT_EQ(errorOfEdited([](Value &) {}), "");
  expectError(errorOfEdited(removeModelField("vocab")),
              "t.json: model.vocab: missing or not an object");
  expectError(errorOfEdited(removeModelField("merges")),
              "t.json: model.merges: missing or not an array");
  expectError(errorOfEdited(
                  [](Value &d) { (*model(d).getArray("merges"))[3] = "zz q"; }),
              "t.json: model.merges[3]: \"zz q\": token \"zz\" is not in "
              "model.vocab");
  expectError(errorOfEdited([](Value &d) {
                (*model(d).getArray("merges"))[0] = "nospace";
              }),
              "model.merges[0]: \"nospace\" is not two tokens separated by a "
              "space");
  expectError(errorOfEdited(setModelField("type", "WordPiece")),
              "t.json: model.type: WordPiece is not supported (only BPE)");
  expectError(errorOfEdited(setModelField("type", "Unigram")),
              "model.type: Unigram is not supported");
  expectError(errorOfEdited(setModelField("byte_fallback", true)),
              "t.json: model.byte_fallback: true is not supported");
  expectError(errorOfEdited(setModelField("dropout", 0.1)),
              "model.dropout: 0.1 is not supported");
  expectError(errorOfEdited(setModelField("continuing_subword_prefix", "##")),
              "model.continuing_subword_prefix: \"##\" is not supported");
  expectError(errorOfEdited(
                  [](Value &d) { (*model(d).getObject("vocab"))["dup"] = 5; }),
              "model.vocab: id 5 is given to both");
  expectError(errorOfEdited(
                  [](Value &d) { (*model(d).getObject("vocab"))["neg"] = -1; }),
              "model.vocab[\"neg\"]: -1 is not a token id");
  expectError(errorOfEdited(setField("normalizer", Object{{"type", "NFC"}})),
              "t.json: normalizer.type: NFC is not supported");
  expectError(
      errorOfEdited(setField("normalizer", Object{{"type", "Lowercase"}})),
      "normalizer.type: Lowercase is not supported");
  expectError(
      errorOfEdited(setField("pre_tokenizer", Object{{"type", "Metaspace"}})),
      "pre_tokenizer.type: Metaspace is not supported");
  expectError(errorOfEdited(setField("pre_tokenizer", nullptr)),
              "pre_tokenizer: null is not supported");
  expectError(errorOfEdited(setField("decoder", Object{{"type", "BPE"}})),
              "t.json: decoder.type: BPE is not supported (only ByteLevel)");
  expectError(errorOfEdited([](Value &d) {
                (*(*d.getAsObject()->getArray("added_tokens"))[0]
                      .getAsObject())["lstrip"] = true;
              }),
              "added_tokens[0].lstrip: true is not supported");

  // The Llama-3 layout: the Split and its order with ByteLevel.
  auto editSplit = [](const char *field, Value value) {
    return [field, value](Value &d) {
      Object &pre = *d.getAsObject()->getObject("pre_tokenizer");
      (*(*pre.getArray("pretokenizers"))[0].getAsObject())[field] = value;
    };
  };
  EXPECT_EQ(errorOfEdited([](Value &) {}, "llama3.tokenizer.json"), "");
  expectError(
      errorOfEdited(editSplit("behavior", "Removed"), "llama3.tokenizer.json"),
      "pre_tokenizer.pretokenizers[0].behavior: Removed is not "
      "supported (only Isolated)");
  expectError(errorOfEdited(editSplit("invert", true), "llama3.tokenizer.json"),
              "pre_tokenizer.pretokenizers[0].invert: true is not supported");
  expectError(errorOfEdited(editSplit("pattern", Object{{"Regex", "(a"}}),
                            "llama3.tokenizer.json"),
              "pre_tokenizer.pretokenizers[0].pattern: the regex does not "
              "compile at offset 2");
  expectError(errorOfEdited(
                  [](Value &d) {
                    Object &pre = *d.getAsObject()->getObject("pre_tokenizer");
                    Array &list = *pre.getArray("pretokenizers");
                    std::swap(list[0], list[1]);
                  },
                  "llama3.tokenizer.json"),
              "pre_tokenizer: a byte-level BPE needs exactly one ByteLevel, "
              "as the last pre-tokenizer");

  // Files that do not read or parse.
  TempDir dir;
  std::string corrupt = dir.path("corrupt.json");
  writeRaw(corrupt, "{\"model\": ");
  auto bad = loadHFTokenizer(corrupt);
  ASSERT_FALSE(bool(bad));
  expectError(llvm::toString(bad.takeError()), corrupt + ": corrupt JSON");
  auto missing = loadHFTokenizer(dir.path("missing.json"));
  ASSERT_FALSE(bool(missing));
  expectError(llvm::toString(missing.takeError()), "missing.json: cannot read");
  std::string garbage = dir.path("garbage.model");
  writeRaw(garbage, "this is not a protobuf \xff\xff\xff");
  auto notModel = loadSentencePieceTokenizer(garbage);
  ASSERT_FALSE(bool(notModel));
  expectError(llvm::toString(notModel.takeError()),
              garbage + ": not a SentencePiece model");
  auto noModel = loadSentencePieceTokenizer(dir.path("missing.model"));
  ASSERT_FALSE(bool(noModel));
  expectError(llvm::toString(noModel.takeError()),
              "missing.model: cannot read");
}

namespace {
/// Runs ratrain-tokenize; the exit code and its standard error.
std::pair<int, std::string> runTool(const TempDir &dir,
                                    std::vector<std::string> args) {
  std::string tool = RATRAIN_TOKENIZE;
  std::string errors = dir.path("stderr.txt");
  std::vector<llvm::StringRef> argv{tool};
  argv.insert(argv.end(), args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {
      std::nullopt, llvm::StringRef(""), llvm::StringRef(errors)};
  int code = llvm::sys::ExecuteAndWait(tool, argv, std::nullopt, redirects);
  return {code, readRaw(errors)};
}
} // namespace

TEST(TokenizeTool, ModelTokenizersWriteTheirVocabulary) {
  TempDir dir;
  std::string text = dir.path("a.txt");
  writeRaw(text, "Hello, world! It's 2024 \xe4\xb8\xad\xe6\x96\x87\n"
                 "<|endoftext|> <|begin_of_text|> end");
  struct {
    const char *option, *file;
    uint32_t vocab;
  } tokenizers[] = {{"--sentencepiece", "spm.model", 800},
                    {"--tokenizer", "gpt2.tokenizer.json", 757},
                    {"--tokenizer", "llama3.tokenizer.json", 762}};
  for (const auto &t : tokenizers) {
    std::string tok = dir.path(std::string(t.file) + ".tok");
    std::string back = dir.path(std::string(t.file) + ".txt");
    auto [code, errors] =
        runTool(dir, {t.option, dataPath(t.file), "-o", tok, text});
    ASSERT_EQ(code, 0) << errors;
    auto file = TokenFile::open(tok);
    ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
    EXPECT_EQ(file->vocab(), t.vocab) << t.file;
    EXPECT_EQ(file->bytesPerToken(), 2u);
    auto tokenizer = loadTokenizer(llvm::StringRef(t.option) == "--tokenizer"
                                       ? TokenizerKind::HFJson
                                       : TokenizerKind::SentencePiece,
                                   dataPath(t.file));
    ASSERT_TRUE(bool(tokenizer));
    EXPECT_EQ(file->all(), *(*tokenizer)->encode(readRaw(text)));
    std::tie(code, errors) =
        runTool(dir, {t.option, dataPath(t.file), "--decode", tok, "-o", back});
    ASSERT_EQ(code, 0) << errors;
    EXPECT_EQ(readRaw(back), readRaw(text)) << t.file;
  }

  // Decoding with another tokenizer than the file's is refused.
  auto [code, errors] =
      runTool(dir, {"--sentencepiece", dataPath("spm.model"), "--decode",
                    dir.path("gpt2.tokenizer.json.tok")});
  EXPECT_EQ(code, 1);
  EXPECT_NE(errors.find("the token file's vocabulary is 757"),
            std::string::npos)
      << errors;

  // A bad tokenizer file or input: exit 1, an error naming the file, and
  // no output.
  std::string corrupt = dir.path("corrupt.json");
  writeRaw(corrupt, "{\"model\": {\"type\": \"BPE\"}}");
  std::string notUTF8 = dir.path("latin1.txt");
  writeRaw(notUTF8, "caf\xe9\n");
  std::string out = dir.path("out.tok");
  std::vector<std::pair<std::vector<std::string>, std::string>> failures = {
      {{"--tokenizer", corrupt, "-o", out, text},
       "error: " + corrupt + ": model.vocab: missing or not an object"},
      {{"--sentencepiece", corrupt, "-o", out, text},
       "error: " + corrupt + ": not a SentencePiece model"},
      {{"--tokenizer", dataPath("gpt2.tokenizer.json"), "-o", out, notUTF8},
       "error: " + notUTF8 + ": not valid UTF-8 at byte 3"},
      {{"--tokenizer", corrupt, "--sentencepiece", corrupt, "-o", out, text},
       "--sentencepiece and --tokenizer exclude each other"}};
  for (const auto &[args, message] : failures) {
    auto [code, errors] = runTool(dir, args);
    EXPECT_EQ(code, 1) << message;
    EXPECT_NE(errors.find(message), std::string::npos) << errors;
    EXPECT_FALSE(llvm::sys::fs::exists(out)) << message;
  }

  // A vocabulary over 65536 ids takes 4-byte ids; --width 2 is refused.
  Value document = readDocument("gpt2.tokenizer.json");
  (*document.getAsObject()->getArray("added_tokens"))
      .push_back(Object{{"id", 70000},
                        {"content", "<|big|>"},
                        {"single_word", false},
                        {"lstrip", false},
                        {"rstrip", false},
                        {"normalized", false},
                        {"special", true}});
  std::string big = dir.path("big.json");
  std::string json;
  llvm::raw_string_ostream(json) << document;
  writeRaw(big, json);
  std::tie(code, errors) =
      runTool(dir, {"--tokenizer", big, "--width", "2", "-o", out, text});
  EXPECT_EQ(code, 1);
  EXPECT_NE(errors.find("error: " + big +
                        ": the vocabulary of 70001 ids does not fit 2-byte "
                        "token ids (at most 65536)"),
            std::string::npos)
      << errors;
  EXPECT_FALSE(llvm::sys::fs::exists(out));
  writeRaw(text, "one <|big|> two");
  std::tie(code, errors) = runTool(dir, {"--tokenizer", big, "-o", out, text});
  ASSERT_EQ(code, 0) << errors;
  auto file = TokenFile::open(out);
  ASSERT_TRUE(bool(file));
  EXPECT_EQ(file->vocab(), 70001u);
  EXPECT_EQ(file->bytesPerToken(), 4u);
  std::vector<uint32_t> ids = file->all();
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 70000u), 1);
}
