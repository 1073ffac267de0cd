//===- BPETokenizer.cpp - HuggingFace byte-level BPE tokenizer.json -------===//
//
// What HuggingFace `tokenizers` does for a byte-level BPE tokenizer.json
// (GPT-2, Llama-3, StarCoder-style Digits layouts), with encode(text,
// add_special_tokens=False):
//  1. added_tokens are found in the text verbatim, leftmost longest (first
//     those with normalized false, then the others, as HF's two passes do)
//     and become their ids;
//  2. the rest is pre-tokenized: each pre-tokenizer of the (Sequence of)
//     Split (Isolated), Digits and ByteLevel splits every piece further;
//     ByteLevel first puts a space before a piece that does not start with
//     one when add_prefix_space is set, then splits with GPT-2's regex when
//     use_regex is set. Regexes run in PCRE2 (UTF, UCP, JIT when available);
//  3. each piece is one BPE word: with ignore_merges, a piece that is a
//     token is that token; otherwise its bytes are merged, lowest merge rank
//     first (leftmost among equal ranks), through a priority queue as HF's
//     Word::merge_all does. Words are cached.
// The model works on raw bytes: the vocabulary's strings of GPT-2's
// byte-to-unicode alphabet are turned back into bytes when the file is read,
// so no text is ever mapped to that alphabet. Decoding concatenates the
// tokens' bytes (ByteLevel decoder: a token with characters outside the
// alphabet contributes its UTF-8 as is); unlike HF, invalid UTF-8 in the
// result is kept as is, not replaced by U+FFFD.
//
//===----------------------------------------------------------------------===//

#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/FileIO.h"
#include "ratrain/runtime/Tokenizer.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/FormatVariadic.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdio>
#include <deque>
#include <queue>

using namespace ratrain::rt;
using llvm::json::Array;
using llvm::json::Object;
using llvm::json::Value;

namespace {

/// GPT-2's pre-tokenization regex (ByteLevel with use_regex).
constexpr const char *kGPT2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
    "\\s+(?!\\S)|\\s+";

/// Ids are kept below this (a vocabulary of 64 Mi tokens).
constexpr uint64_t kMaxTokenId = uint64_t(1) << 26;

/// Words whose tokens are cached, at most.
constexpr size_t kCacheCapacity = size_t(1) << 16;

/// GPT-2's byte-to-unicode alphabet: the code point standing for each byte
/// (printable Latin-1 bytes for themselves, the others for 256 + n).
struct ByteAlphabet {
  uint32_t charOfByte[256];
  /// Byte of each code point below 324, -1 for code points of no byte.
  int16_t byteOfChar[324];

  ByteAlphabet() {
    std::fill(std::begin(byteOfChar), std::end(byteOfChar), int16_t(-1));
    auto printable = [](unsigned b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
             (b >= 0xAE && b <= 0xFF);
    };
    uint32_t next = 256;
    for (unsigned b = 0; b < 256; ++b) {
      charOfByte[b] = printable(b) ? b : next++;
      byteOfChar[charOfByte[b]] = int16_t(b);
    }
  }

  /// The bytes a token string of the alphabet stands for; nullopt when one
  /// of its characters is not in the alphabet.
  std::optional<std::string> toBytes(llvm::StringRef token) const {
    std::string bytes;
    const auto *cursor = reinterpret_cast<const llvm::UTF8 *>(token.begin());
    const auto *end = reinterpret_cast<const llvm::UTF8 *>(token.end());
    while (cursor < end) {
      llvm::UTF32 codePoint;
      if (llvm::convertUTF8Sequence(&cursor, end, &codePoint,
                                    llvm::strictConversion) !=
          llvm::conversionOK)
        return std::nullopt;
      if (codePoint >= std::size(byteOfChar) || byteOfChar[codePoint] < 0)
        return std::nullopt;
      bytes.push_back(char(byteOfChar[codePoint]));
    }
    return bytes;
  }
};

const ByteAlphabet &byteAlphabet() {
  static const ByteAlphabet alphabet;
  return alphabet;
}

/// A compiled PCRE2 pattern (UTF, UCP; JIT-compiled when PCRE2 has a JIT).
class Regex {
public:
  static llvm::Expected<std::unique_ptr<Regex>> compile(llvm::StringRef pattern,
                                                        bool literal) {
    int errorCode = 0;
    PCRE2_SIZE errorOffset = 0;
    uint32_t options = PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0);
    pcre2_code *code = pcre2_compile(
        reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
        &errorCode, &errorOffset, nullptr);
    if (!code) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(errorCode, message, sizeof(message));
      return makeError(llvm::formatv("the regex does not compile at offset "
                                     "{0}: {1}",
                                     errorOffset,
                                     reinterpret_cast<char *>(message)));
    }
    auto regex = std::unique_ptr<Regex>(new Regex());
    regex->code = code;
    // Without a JIT (or when it fails) pcre2_match interprets the pattern.
    (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    regex->matchData = pcre2_match_data_create_from_pattern(code, nullptr);
    if (!regex->matchData)
      return makeError("out of memory for the regex's match data");
    return regex;
  }

  ~Regex() {
    pcre2_match_data_free(matchData);
    pcre2_code_free(code);
  }

  /// HF's Split with behavior Isolated: appends the matches and the text
  /// between them to `pieces`, in order, leaving out empty ones. `text`
  /// must be valid UTF-8 (it is not checked again). After an empty match
  /// the search goes on one character further, as Oniguruma's find_iter.
  llvm::Error split(llvm::StringRef text,
                    std::vector<llvm::StringRef> &pieces) const {
    auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t offset = 0, previous = 0;
    while (offset <= text.size()) {
      int rc = pcre2_match(code, subject, text.size(), offset,
                           PCRE2_NO_UTF_CHECK, matchData, nullptr);
      if (rc == PCRE2_ERROR_NOMATCH)
        break;
      if (rc < 0) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(rc, message, sizeof(message));
        return makeError(llvm::formatv("the pre-tokenizer regex failed at "
                                       "byte {0}: {1}",
                                       offset,
                                       reinterpret_cast<char *>(message)));
      }
      PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(matchData);
      size_t start = ovector[0], end = ovector[1];
      if (start > previous)
        pieces.push_back(text.slice(previous, start));
      if (end > start)
        pieces.push_back(text.slice(start, end));
      previous = end;
      if (end > start) {
        offset = end;
        continue;
      }
      if (end >= text.size())
        break;
      // Past the empty match: one UTF-8 character on.
      offset = end + 1;
      while (offset < text.size() && (text[offset] & 0xC0) == 0x80)
        ++offset;
    }
    if (previous < text.size())
      pieces.push_back(text.substr(previous));
    return llvm::Error::success();
  }

private:
  Regex() = default;
  pcre2_code *code = nullptr;
  pcre2_match_data *matchData = nullptr;
};

/// One pre-tokenizer of the sequence.
struct PreTokenizerStep {
  /// Splits every piece (Isolated); none: the piece stays whole.
  std::unique_ptr<Regex> regex;
  /// ByteLevel's add_prefix_space.
  bool addPrefixSpace = false;
  /// Whether it is the ByteLevel pre-tokenizer.
  bool byteLevel = false;
};

/// A token of added_tokens.
struct AddedToken {
  std::string content;
  uint32_t id = 0;
};

/// Leftmost-longest search for a set of added tokens.
class AddedTokenMatcher {
public:
  void add(AddedToken token) {
    auto &bucket = byFirstByte[static_cast<unsigned char>(token.content[0])];
    bucket.push_back(std::move(token));
    std::stable_sort(bucket.begin(), bucket.end(),
                     [](const AddedToken &a, const AddedToken &b) {
                       return a.content.size() > b.content.size();
                     });
    empty = false;
  }

  /// Appends the pieces of `text` to `out`: added tokens as their ids, the
  /// text between them (non-empty) with no id.
  void split(llvm::StringRef text,
             std::vector<std::pair<llvm::StringRef, int64_t>> &out) const {
    if (empty) {
      out.push_back({text, -1});
      return;
    }
    size_t previous = 0;
    for (size_t i = 0; i < text.size();) {
      const AddedToken *match = nullptr;
      for (const AddedToken &token :
           byFirstByte[static_cast<unsigned char>(text[i])])
        if (text.substr(i).starts_with(token.content)) {
          match = &token; // The bucket is sorted longest first.
          break;
        }
      if (!match) {
        ++i;
        continue;
      }
      if (i > previous)
        out.push_back({text.slice(previous, i), -1});
      out.push_back({text.substr(i, match->content.size()), match->id});
      i += match->content.size();
      previous = i;
    }
    if (previous < text.size())
      out.push_back({text.substr(previous), -1});
  }

private:
  std::vector<AddedToken> byFirstByte[256];
  bool empty = true;
};

/// A merge: its rank (position in model.merges) and the token it makes.
struct Merge {
  uint32_t rank = 0;
  uint32_t result = 0;
};

class BPETokenizer : public Tokenizer {
public:
  llvm::Expected<std::vector<uint32_t>> encode(llvm::StringRef text) override;
  llvm::Expected<std::string> decode(llvm::ArrayRef<uint32_t> ids) override;
  uint32_t vocabSize() const override { return vocab; }
  llvm::StringRef kind() const override { return "BPE"; }

  /// Appends the tokens of one pre-tokenized word (raw bytes).
  llvm::Error encodeWord(llvm::StringRef word, std::vector<uint32_t> &ids);
  /// Runs the merges over the symbols of `word`.
  llvm::Error mergeWord(llvm::StringRef word, std::vector<uint32_t> &ids) const;

  static uint64_t pairKey(uint32_t left, uint32_t right) {
    return (uint64_t(left) << 32) | right;
  }

  uint32_t vocab = 0;
  /// Raw bytes of every token of the byte alphabet -> its id.
  llvm::StringMap<uint32_t> idOfBytes;
  /// The token of each single byte; UINT32_MAX when the vocabulary has none.
  uint32_t idOfByte[256];
  llvm::DenseMap<uint64_t, Merge> merges;
  bool ignoreMerges = false;
  std::optional<uint32_t> unknown;
  bool fuseUnknown = false;
  /// What decode() gives for each id; hasToken says which ids exist.
  std::vector<std::string> decoded;
  std::vector<bool> hasToken;
  /// HF's two passes: added tokens with normalized false, then the others.
  AddedTokenMatcher rawAdded, normalizedAdded;
  std::vector<PreTokenizerStep> preTokenizers;
  llvm::StringMap<std::vector<uint32_t>> cache;
};
} // namespace

llvm::Error BPETokenizer::mergeWord(llvm::StringRef word,
                                    std::vector<uint32_t> &ids) const {
  struct Symbol {
    uint32_t id;
    int prev, next;
    bool removed;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  bool lastUnknown = false;
  for (size_t i = 0; i < word.size(); ++i) {
    unsigned char byte = word[i];
    uint32_t id = idOfByte[byte];
    if (id == UINT32_MAX) {
      if (!unknown)
        return makeError(llvm::formatv("byte 0x{0:X-2} has no token in "
                                       "model.vocab and there is no "
                                       "unk_token",
                                       unsigned(byte)));
      if (fuseUnknown && lastUnknown)
        continue;
      id = *unknown;
      lastUnknown = true;
    } else {
      lastUnknown = false;
    }
    int index = int(symbols.size());
    symbols.push_back({id, index - 1, index + 1, false});
  }
  if (symbols.empty())
    return llvm::Error::success();
  symbols.back().next = -1;

  struct Candidate {
    uint32_t rank;
    int position;
    uint32_t result;
    bool operator>(const Candidate &other) const {
      return rank != other.rank ? rank > other.rank : position > other.position;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>,
                      std::greater<Candidate>>
      queue;
  auto consider = [&](int left) {
    int right = symbols[left].next;
    if (right < 0)
      return;
    auto merge = merges.find(pairKey(symbols[left].id, symbols[right].id));
    if (merge != merges.end())
      queue.push({merge->second.rank, left, merge->second.result});
  };
  for (int i = 0; i + 1 < int(symbols.size()); ++i)
    consider(i);
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol &left = symbols[top.position];
    if (left.removed || left.next < 0)
      continue;
    // The pair may have changed since it was queued.
    auto merge = merges.find(pairKey(left.id, symbols[left.next].id));
    if (merge == merges.end() || merge->second.result != top.result)
      continue;
    Symbol &right = symbols[left.next];
    left.id = top.result;
    right.removed = true;
    left.next = right.next;
    if (right.next >= 0)
      symbols[right.next].prev = top.position;
    if (left.prev >= 0)
      consider(left.prev);
    consider(top.position);
  }
  for (const Symbol &symbol : symbols)
    if (!symbol.removed)
      ids.push_back(symbol.id);
  return llvm::Error::success();
}

llvm::Error BPETokenizer::encodeWord(llvm::StringRef word,
                                     std::vector<uint32_t> &ids) {
  if (word.empty())
    return llvm::Error::success();
  if (ignoreMerges) {
    auto whole = idOfBytes.find(word);
    if (whole != idOfBytes.end()) {
      ids.push_back(whole->second);
      return llvm::Error::success();
    }
  }
  auto cached = cache.find(word);
  if (cached != cache.end()) {
    ids.insert(ids.end(), cached->second.begin(), cached->second.end());
    return llvm::Error::success();
  }
  size_t first = ids.size();
  if (llvm::Error error = mergeWord(word, ids))
    return error;
  if (cache.size() < kCacheCapacity)
    cache[word] = std::vector<uint32_t>(ids.begin() + first, ids.end());
  return llvm::Error::success();
}

llvm::Expected<std::vector<uint32_t>>
BPETokenizer::encode(llvm::StringRef text) {
  if (std::optional<size_t> bad = findInvalidUTF8(text))
    return makeError(
        llvm::formatv("the text is not valid UTF-8 (byte {0})", *bad));
  std::vector<std::pair<llvm::StringRef, int64_t>> rawSplit, segments;
  rawAdded.split(text, rawSplit);
  for (const auto &[part, id] : rawSplit) {
    if (id >= 0)
      segments.push_back({part, id});
    else
      normalizedAdded.split(part, segments);
  }

  std::vector<uint32_t> ids;
  std::vector<llvm::StringRef> pieces, next;
  std::deque<std::string> prefixed; // Pieces that got a prefix space.
  for (const auto &[segment, id] : segments) {
    if (id >= 0) {
      ids.push_back(uint32_t(id));
      continue;
    }
    pieces.assign(1, segment);
    for (const PreTokenizerStep &step : preTokenizers) {
      next.clear();
      for (llvm::StringRef piece : pieces) {
        if (step.addPrefixSpace && !piece.starts_with(" ")) {
          prefixed.push_back((" " + piece).str());
          piece = prefixed.back();
        }
        if (!step.regex) {
          next.push_back(piece);
          continue;
        }
        if (llvm::Error error = step.regex->split(piece, next))
          return std::move(error);
      }
      pieces.swap(next);
    }
    for (llvm::StringRef piece : pieces)
      if (llvm::Error error = encodeWord(piece, ids))
        return std::move(error);
    prefixed.clear();
  }
  return ids;
}

llvm::Expected<std::string> BPETokenizer::decode(llvm::ArrayRef<uint32_t> ids) {
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= vocab || !hasToken[ids[i]])
      return makeError(llvm::formatv("token {0} at position {1} is not in "
                                     "the vocabulary",
                                     ids[i], i));
    text += decoded[ids[i]];
  }
  return text;
}

//===----------------------------------------------------------------------===//
// Reading tokenizer.json
//===----------------------------------------------------------------------===//

namespace {
/// `name: field: what`.
llvm::Error fieldError(llvm::StringRef name, const llvm::Twine &field,
                       const llvm::Twine &what) {
  return makeError(name + ": " + field + ": " + what);
}

/// A JSON value as it reads in a message (strings quoted, long ones cut).
std::string show(const Value &value) {
  std::string text;
  llvm::raw_string_ostream(text) << value;
  if (text.size() > 60)
    text = text.substr(0, 57) + "...";
  return text;
}

/// A number with up to 6 significant digits (0.1, not 0.10000000000000001).
std::string showNumber(double number) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", number);
  return text;
}

/// True when `key` is absent or null.
bool isNull(const Object &object, llvm::StringRef key) {
  const Value *value = object.get(key);
  return !value || value->kind() == Value::Null;
}

/// A boolean field; `fallback` when absent or null.
llvm::Expected<bool> getBool(const Object &object, llvm::StringRef key,
                             bool fallback, llvm::StringRef name,
                             const llvm::Twine &field) {
  if (isNull(object, key))
    return fallback;
  if (std::optional<bool> value = object.getBoolean(key))
    return *value;
  return fieldError(name, field, "not a boolean: " + show(*object.get(key)));
}

/// Refuses a boolean option that is set (`what` says why).
llvm::Error refuseTrue(const Object &object, llvm::StringRef key,
                       llvm::StringRef name, const llvm::Twine &field) {
  auto value = getBool(object, key, false, name, field);
  if (!value)
    return value.takeError();
  if (*value)
    return fieldError(name, field, "true is not supported");
  return llvm::Error::success();
}

/// A token id field: an integer in [0, kMaxTokenId).
llvm::Expected<uint32_t> getId(const Value &value, llvm::StringRef name,
                               const llvm::Twine &field) {
  std::optional<int64_t> id = value.getAsInteger();
  if (!id || *id < 0 || uint64_t(*id) >= kMaxTokenId)
    return fieldError(name, field,
                      llvm::formatv("{0} is not a token id (an integer from "
                                    "0 to {1})",
                                    show(value), kMaxTokenId - 1));
  return uint32_t(*id);
}

/// The type of a tagged object (`{"type": ...}`).
llvm::Expected<llvm::StringRef>
getType(const Value &value, llvm::StringRef name, const llvm::Twine &field) {
  const Object *object = value.getAsObject();
  if (!object)
    return fieldError(name, field, "not an object: " + show(value));
  std::optional<llvm::StringRef> type = object->getString("type");
  if (!type)
    return fieldError(name, field + ".type", "missing or not a string");
  return *type;
}

/// Adds the pre-tokenizer `value` (and those of a Sequence) to `steps`.
llvm::Error parsePreTokenizer(const Value &value, llvm::StringRef name,
                              const std::string &field,
                              std::vector<PreTokenizerStep> &steps) {
  auto type = getType(value, name, field);
  if (!type)
    return type.takeError();
  const Object &object = *value.getAsObject();
  if (*type == "Sequence") {
    const Array *list = object.getArray("pretokenizers");
    if (!list)
      return fieldError(name, field + ".pretokenizers",
                        "missing or not an array");
    for (size_t i = 0; i < list->size(); ++i)
      if (llvm::Error error = parsePreTokenizer(
              (*list)[i], name,
              field + ".pretokenizers[" + std::to_string(i) + "]", steps))
        return error;
    return llvm::Error::success();
  }
  PreTokenizerStep step;
  if (*type == "ByteLevel") {
    step.byteLevel = true;
    auto useRegex =
        getBool(object, "use_regex", true, name, field + ".use_regex");
    if (!useRegex)
      return useRegex.takeError();
    auto prefix = getBool(object, "add_prefix_space", true, name,
                          field + ".add_prefix_space");
    if (!prefix)
      return prefix.takeError();
    step.addPrefixSpace = *prefix;
    if (*useRegex) {
      auto regex = Regex::compile(kGPT2Pattern, /*literal=*/false);
      if (!regex)
        return regex.takeError();
      step.regex = std::move(*regex);
    }
  } else if (*type == "Split") {
    const Object *pattern = object.getObject("pattern");
    std::optional<llvm::StringRef> regexText, literal;
    if (pattern) {
      regexText = pattern->getString("Regex");
      literal = pattern->getString("String");
    }
    if (!regexText && !literal)
      return fieldError(name, field + ".pattern",
                        "missing, or neither {\"Regex\": ...} nor "
                        "{\"String\": ...}");
    std::optional<llvm::StringRef> behavior = object.getString("behavior");
    if (!behavior || *behavior != "Isolated")
      return fieldError(name, field + ".behavior",
                        (behavior ? *behavior : llvm::StringRef("missing")) +
                            " is not supported (only Isolated)");
    if (llvm::Error error =
            refuseTrue(object, "invert", name, field + ".invert"))
      return error;
    auto regex = Regex::compile(regexText ? *regexText : *literal,
                                /*literal=*/!regexText);
    if (!regex)
      return fieldError(name, field + ".pattern",
                        llvm::toString(regex.takeError()));
    step.regex = std::move(*regex);
  } else if (*type == "Digits") {
    auto individual = getBool(object, "individual_digits", false, name,
                              field + ".individual_digits");
    if (!individual)
      return individual.takeError();
    // Rust's char::is_numeric is the general category N.
    auto regex = Regex::compile(*individual ? "\\p{N}" : "\\p{N}+",
                                /*literal=*/false);
    if (!regex)
      return regex.takeError();
    step.regex = std::move(*regex);
  } else {
    return fieldError(name, field + ".type",
                      *type + " is not supported (Sequence, Split, Digits "
                              "and ByteLevel are)");
  }
  steps.push_back(std::move(step));
  return llvm::Error::success();
}

/// Reads model.vocab and model.merges into `tokenizer`.
llvm::Error parseVocabAndMerges(const Object &model, llvm::StringRef name,
                                BPETokenizer &tokenizer) {
  const ByteAlphabet &alphabet = byteAlphabet();
  const Object *vocab = model.getObject("vocab");
  if (!vocab)
    return fieldError(name, "model.vocab", "missing or not an object");
  if (vocab->empty())
    return fieldError(name, "model.vocab", "empty");
  std::vector<std::optional<llvm::StringRef>> tokenOfId;
  for (const auto &[key, value] : *vocab) {
    auto id = getId(value, name, "model.vocab[\"" + key.str() + "\"]");
    if (!id)
      return id.takeError();
    if (*id >= tokenOfId.size())
      tokenOfId.resize(*id + 1);
    if (tokenOfId[*id])
      return fieldError(
          name, "model.vocab",
          llvm::formatv("id {0} is given to both \"{1}\" and \"{2}\"", *id,
                        std::min(*tokenOfId[*id], llvm::StringRef(key)),
                        std::max(*tokenOfId[*id], llvm::StringRef(key))));
    tokenOfId[*id] = llvm::StringRef(key);
  }
  tokenizer.vocab = uint32_t(tokenOfId.size());
  tokenizer.decoded.assign(tokenOfId.size(), std::string());
  tokenizer.hasToken.assign(tokenOfId.size(), false);
  std::fill(std::begin(tokenizer.idOfByte), std::end(tokenizer.idOfByte),
            UINT32_MAX);
  for (uint32_t id = 0; id < tokenOfId.size(); ++id) {
    if (!tokenOfId[id])
      continue;
    tokenizer.hasToken[id] = true;
    if (std::optional<std::string> bytes = alphabet.toBytes(*tokenOfId[id])) {
      tokenizer.idOfBytes[*bytes] = id;
      if (bytes->size() == 1)
        tokenizer.idOfByte[static_cast<unsigned char>((*bytes)[0])] = id;
      tokenizer.decoded[id] = std::move(*bytes);
    } else {
      tokenizer.decoded[id] = tokenOfId[id]->str();
    }
  }

  const Array *merges = model.getArray("merges");
  if (!merges)
    return fieldError(name, "model.merges", "missing or not an array");
  for (size_t rank = 0; rank < merges->size(); ++rank) {
    const Value &entry = (*merges)[rank];
    std::string field = "model.merges[" + std::to_string(rank) + "]";
    llvm::StringRef left, right;
    if (std::optional<llvm::StringRef> text = entry.getAsString()) {
      std::tie(left, right) = text->split(' ');
      if (left.size() == text->size())
        return fieldError(name, field,
                          show(entry) + " is not two tokens separated by a "
                                        "space");
    } else if (const Array *pair = entry.getAsArray();
               pair && pair->size() == 2 && (*pair)[0].getAsString() &&
               (*pair)[1].getAsString()) {
      left = *(*pair)[0].getAsString();
      right = *(*pair)[1].getAsString();
    } else {
      return fieldError(name, field,
                        show(entry) + " is neither \"a b\" nor [\"a\", "
                                      "\"b\"]");
    }
    std::optional<uint32_t> ids[3];
    std::string merged = (left + right).str();
    llvm::StringRef parts[3] = {left, right, merged};
    for (int i = 0; i < 3; ++i) {
      if (const Value *id = vocab->get(parts[i]))
        ids[i] = uint32_t(*id->getAsInteger());
      else
        return fieldError(name, field,
                          llvm::formatv("{0}: token \"{1}\" is not in "
                                        "model.vocab",
                                        show(entry), parts[i]));
    }
    // As HF's map of merges: a pair merged twice keeps the later rank.
    tokenizer.merges[BPETokenizer::pairKey(*ids[0], *ids[1])] =
        Merge{uint32_t(rank), *ids[2]};
  }
  return llvm::Error::success();
}

/// Reads added_tokens into `tokenizer` (after the vocabulary).
llvm::Error parseAddedTokens(const Object &document, llvm::StringRef name,
                             BPETokenizer &tokenizer) {
  if (isNull(document, "added_tokens"))
    return llvm::Error::success();
  const Array *list = document.getArray("added_tokens");
  if (!list)
    return fieldError(name, "added_tokens", "not an array");
  for (size_t i = 0; i < list->size(); ++i) {
    std::string field = "added_tokens[" + std::to_string(i) + "]";
    const Object *token = (*list)[i].getAsObject();
    if (!token)
      return fieldError(name, field, "not an object");
    const Value *idValue = token->get("id");
    if (!idValue)
      return fieldError(name, field + ".id", "missing");
    auto id = getId(*idValue, name, field + ".id");
    if (!id)
      return id.takeError();
    std::optional<llvm::StringRef> content = token->getString("content");
    if (!content || content->empty())
      return fieldError(name, field + ".content",
                        "missing, empty or not a string");
    for (llvm::StringRef option : {"single_word", "lstrip", "rstrip"})
      if (llvm::Error error =
              refuseTrue(*token, option, name, field + "." + option))
        return error;
    auto special = getBool(*token, "special", false, name, field + ".special");
    if (!special)
      return special.takeError();
    auto normalized =
        getBool(*token, "normalized", !*special, name, field + ".normalized");
    if (!normalized)
      return normalized.takeError();
    if (*id >= tokenizer.vocab) {
      tokenizer.vocab = *id + 1;
      tokenizer.decoded.resize(tokenizer.vocab);
      tokenizer.hasToken.resize(tokenizer.vocab, false);
    }
    tokenizer.hasToken[*id] = true;
    std::optional<std::string> bytes = byteAlphabet().toBytes(*content);
    tokenizer.decoded[*id] = bytes ? *bytes : content->str();
    AddedToken added{content->str(), *id};
    if (*normalized)
      tokenizer.normalizedAdded.add(std::move(added));
    else
      tokenizer.rawAdded.add(std::move(added));
  }
  return llvm::Error::success();
}
} // namespace

llvm::Expected<std::unique_ptr<Tokenizer>>
ratrain::rt::parseHFTokenizer(const Value &document, llvm::StringRef name) {
  const Object *root = document.getAsObject();
  if (!root)
    return makeError(name + ": not a tokenizer.json (not a JSON object)");
  const Value *modelValue = root->get("model");
  if (!modelValue)
    return fieldError(name, "model", "missing");
  auto modelType = getType(*modelValue, name, "model");
  if (!modelType)
    return modelType.takeError();
  if (*modelType != "BPE")
    return fieldError(name, "model.type",
                      *modelType + " is not supported (only BPE)");
  const Object &model = *modelValue->getAsObject();

  auto tokenizer = std::make_unique<BPETokenizer>();
  if (llvm::Error error =
          refuseTrue(model, "byte_fallback", name, "model.byte_fallback"))
    return std::move(error);
  if (!isNull(model, "dropout")) {
    std::optional<double> dropout = model.getNumber("dropout");
    if (!dropout || *dropout != 0)
      return fieldError(
          name, "model.dropout",
          (dropout ? showNumber(*dropout) : show(*model.get("dropout"))) +
              " is not supported (BPE dropout is random)");
  }
  for (llvm::StringRef affix :
       {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (isNull(model, affix))
      continue;
    std::optional<llvm::StringRef> text = model.getString(affix);
    if (!text || !text->empty())
      return fieldError(name, "model." + affix,
                        show(*model.get(affix)) +
                            " is not supported (byte-level BPE has none)");
  }
  auto ignoreMerges =
      getBool(model, "ignore_merges", false, name, "model.ignore_merges");
  if (!ignoreMerges)
    return ignoreMerges.takeError();
  tokenizer->ignoreMerges = *ignoreMerges;
  auto fuse = getBool(model, "fuse_unk", false, name, "model.fuse_unk");
  if (!fuse)
    return fuse.takeError();
  tokenizer->fuseUnknown = *fuse;

  if (llvm::Error error = parseVocabAndMerges(model, name, *tokenizer))
    return std::move(error);
  if (!isNull(model, "unk_token")) {
    std::optional<llvm::StringRef> unk = model.getString("unk_token");
    const Value *id = unk ? model.getObject("vocab")->get(*unk) : nullptr;
    if (!id)
      return fieldError(name, "model.unk_token",
                        show(*model.get("unk_token")) +
                            " is not a token of model.vocab");
    tokenizer->unknown = uint32_t(*id->getAsInteger());
  }
  if (llvm::Error error = parseAddedTokens(*root, name, *tokenizer))
    return std::move(error);

  if (!isNull(*root, "normalizer")) {
    auto type = getType(*root->get("normalizer"), name, "normalizer");
    if (!type)
      return type.takeError();
    if (*type == "NFC")
      return fieldError(name, "normalizer.type",
                        "NFC is not supported (RATrain implements no Unicode "
                        "normalization; tokenize elsewhere or, if the text is "
                        "known to be NFC already, remove the normalizer)");
    return fieldError(name, "normalizer.type",
                      *type + " is not supported (only a null normalizer)");
  }

  if (isNull(*root, "pre_tokenizer"))
    return fieldError(name, "pre_tokenizer",
                      "null is not supported (a byte-level BPE needs "
                      "ByteLevel)");
  if (llvm::Error error =
          parsePreTokenizer(*root->get("pre_tokenizer"), name, "pre_tokenizer",
                            tokenizer->preTokenizers))
    return std::move(error);
  // The pieces are bytes once ByteLevel has run: it must come last, once.
  const std::vector<PreTokenizerStep> &steps = tokenizer->preTokenizers;
  if (steps.empty() || !steps.back().byteLevel ||
      llvm::count_if(steps, [](const PreTokenizerStep &step) {
        return step.byteLevel;
      }) != 1)
    return fieldError(name, "pre_tokenizer",
                      "a byte-level BPE needs exactly one ByteLevel, as the "
                      "last pre-tokenizer");

  if (isNull(*root, "decoder"))
    return fieldError(name, "decoder",
                      "null is not supported (only ByteLevel)");
  auto decoder = getType(*root->get("decoder"), name, "decoder");
  if (!decoder)
    return decoder.takeError();
  if (*decoder != "ByteLevel")
    return fieldError(name, "decoder.type",
                      *decoder + " is not supported (only ByteLevel)");
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}

llvm::Expected<std::unique_ptr<Tokenizer>>
ratrain::rt::loadHFTokenizer(llvm::StringRef path) {
  auto document = readJSONFile(path);
  if (!document)
    return document.takeError();
  return parseHFTokenizer(*document, path);
}
