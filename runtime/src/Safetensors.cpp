//===- Safetensors.cpp - safetensors reader and writer --------------------===//

#include "ratrain/runtime/Safetensors.h"
#include "ratrain/Model/JSON.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/FileIO.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cstring>
#include <set>

using namespace ratrain::rt;

namespace {
/// Headers larger than this are rejected as corrupt (the reference
/// implementation uses 100 MB too).
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

std::string hex64(uint64_t value) {
  return llvm::formatv("{0:x16}", value).str();
}
} // namespace

unsigned ratrain::rt::getSafetensorsDTypeBytes(llvm::StringRef dtype) {
  return llvm::StringSwitch<unsigned>(dtype)
      .Cases({"F64", "I64", "U64"}, 8)
      .Cases({"F32", "I32", "U32"}, 4)
      .Cases({"F16", "BF16", "I16", "U16"}, 2)
      .Cases({"I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2"}, 1)
      .Default(0);
}

std::string ratrain::rt::checksumKey(llvm::StringRef tensorName) {
  return ("ratrain.xxh3." + tensorName).str();
}

uint64_t TensorInfo::numElements() const {
  uint64_t n = 1;
  for (int64_t d : shape)
    n *= uint64_t(d);
  return n;
}

std::string ratrain::rt::formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

void SafetensorsWriter::add(llvm::StringRef name, llvm::StringRef dtype,
                            llvm::ArrayRef<int64_t> shape, const void *data,
                            uint64_t bytes) {
  entries.push_back({name.str(), dtype.str(),
                     std::vector<int64_t>(shape.begin(), shape.end()), data,
                     bytes});
}

void SafetensorsWriter::setMetadata(llvm::StringRef key,
                                    llvm::StringRef value) {
  metadata[key.str()] = value.str();
}

uint64_t SafetensorsWriter::dataBytes() const {
  uint64_t total = 0;
  for (const Entry &entry : entries)
    total += entry.bytes;
  return total;
}

llvm::Error SafetensorsWriter::write(llvm::StringRef path) const {
  std::set<std::string> seen;
  llvm::json::Object header;
  llvm::json::Object meta;
  for (auto &[key, value] : metadata)
    meta[key] = value;
  uint64_t offset = 0;
  for (const Entry &entry : entries) {
    if (entry.name == "__metadata__" || !seen.insert(entry.name).second)
      return makeError(llvm::formatv("{0}: tensor name '{1}' is reserved or "
                                     "repeated",
                                     path, entry.name));
    unsigned elemBytes = getSafetensorsDTypeBytes(entry.dtype);
    if (elemBytes == 0)
      return makeError(llvm::formatv("{0}: tensor '{1}' has unknown dtype "
                                     "'{2}'",
                                     path, entry.name, entry.dtype));
    uint64_t numel = 1;
    for (int64_t d : entry.shape) {
      if (d < 0)
        return makeError(llvm::formatv("{0}: tensor '{1}' has a negative "
                                       "dimension in shape {2}",
                                       path, entry.name,
                                       formatShape(entry.shape)));
      numel *= uint64_t(d);
    }
    if (numel * elemBytes != entry.bytes)
      return makeError(llvm::formatv(
          "{0}: tensor '{1}' of shape {2} and dtype {3} needs {4} bytes, "
          "given {5}",
          path, entry.name, formatShape(entry.shape), entry.dtype,
          numel * elemBytes, entry.bytes));
    llvm::json::Array shape;
    for (int64_t d : entry.shape)
      shape.push_back(d);
    header[entry.name] = llvm::json::Object{
        {"dtype", entry.dtype},
        {"shape", std::move(shape)},
        {"data_offsets", llvm::json::Array{offset, offset + entry.bytes}}};
    offset += entry.bytes;
    meta[checksumKey(entry.name)] = hex64(llvm::xxh3_64bits(llvm::ArrayRef(
        static_cast<const uint8_t *>(entry.data), size_t(entry.bytes))));
  }
  header["__metadata__"] = std::move(meta);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(header));
  os.flush();
  // Pad with spaces so that the data starts 8-byte aligned.
  while ((text.size() + 8) % 8 != 0)
    text.push_back(' ');
  unsigned char length[8];
  llvm::support::endian::write64le(length, text.size());

  auto file = AtomicFile::create(path);
  if (!file)
    return file.takeError();
  if (llvm::Error error = file->write(length, 8))
    return error;
  if (llvm::Error error = file->write(text))
    return error;
  for (const Entry &entry : entries)
    if (llvm::Error error = file->write(entry.data, entry.bytes))
      return error;
  return file->commit();
}

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

llvm::Expected<SafetensorsFile> SafetensorsFile::open(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError(llvm::formatv("{0}: cannot read: {1}", path,
                                   buffer.getError().message()));
  llvm::StringRef bytes = (*buffer)->getBuffer();
  auto fail = [&](const llvm::Twine &message) {
    return makeError(path + ": corrupt safetensors file: " + message);
  };
  if (bytes.size() < 8)
    return fail(llvm::formatv("{0} bytes, shorter than the 8-byte header "
                              "length (truncated)",
                              bytes.size()));
  uint64_t headerBytes = llvm::support::endian::read64le(bytes.data());
  if (headerBytes > kMaxHeaderBytes || headerBytes > bytes.size() - 8)
    return fail(llvm::formatv("header length {0} exceeds the file size {1} "
                              "(truncated) or the 100 MB limit",
                              headerBytes, bytes.size()));
  llvm::StringRef headerText = bytes.substr(8, headerBytes);
  llvm::Expected<llvm::json::Value> parsed = ratrain::parseJSON(headerText);
  if (!parsed)
    return fail("header is not valid JSON: " +
                llvm::toString(parsed.takeError()));
  llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return fail("header is not a JSON object");

  SafetensorsFile result;
  result.fileName = path.str();
  result.dataStart = 8 + headerBytes;
  uint64_t dataBytes = bytes.size() - result.dataStart;
  for (auto &[key, value] : *root) {
    std::string name = key.str();
    if (name == "__metadata__") {
      llvm::json::Object *meta = value.getAsObject();
      if (!meta)
        return fail("__metadata__ is not an object");
      for (auto &[metaKey, metaValue] : *meta) {
        std::optional<llvm::StringRef> text = metaValue.getAsString();
        if (!text)
          return fail(llvm::formatv("__metadata__ value of '{0}' is not a "
                                    "string",
                                    metaKey.str()));
        result.meta[metaKey.str()] = text->str();
      }
      continue;
    }
    llvm::json::Object *entry = value.getAsObject();
    if (!entry)
      return fail("tensor '" + name + "' is not an object");
    TensorInfo info;
    info.name = name;
    std::optional<llvm::StringRef> dtype = entry->getString("dtype");
    if (!dtype || getSafetensorsDTypeBytes(*dtype) == 0)
      return fail("tensor '" + name + "' has a missing or unknown dtype");
    info.dtype = dtype->str();
    llvm::json::Array *shape = entry->getArray("shape");
    if (!shape)
      return fail("tensor '" + name + "' has no shape");
    for (const llvm::json::Value &d : *shape) {
      std::optional<int64_t> dim = d.getAsInteger();
      if (!dim || *dim < 0)
        return fail("tensor '" + name + "' has an invalid shape");
      info.shape.push_back(*dim);
    }
    llvm::json::Array *offsets = entry->getArray("data_offsets");
    std::optional<int64_t> begin, end;
    if (offsets && offsets->size() == 2) {
      begin = (*offsets)[0].getAsInteger();
      end = (*offsets)[1].getAsInteger();
    }
    if (!begin || !end || *begin < 0 || *end < *begin)
      return fail("tensor '" + name + "' has invalid data_offsets");
    info.begin = uint64_t(*begin);
    info.end = uint64_t(*end);
    if (info.end > dataBytes)
      return fail(llvm::formatv("tensor '{0}' ends at data offset {1}, but "
                                "the file holds {2} bytes of data (truncated)",
                                name, info.end, dataBytes));
    uint64_t expected =
        info.numElements() * getSafetensorsDTypeBytes(info.dtype);
    if (info.end - info.begin != expected)
      return fail(llvm::formatv("tensor '{0}' of shape {1} and dtype {2} "
                                "needs {3} bytes, data_offsets give {4}",
                                name, formatShape(info.shape), info.dtype,
                                expected, info.end - info.begin));
    result.infos.push_back(std::move(info));
  }
  // The offsets must tile the data section exactly.
  std::vector<const TensorInfo *> sorted;
  for (const TensorInfo &info : result.infos)
    sorted.push_back(&info);
  std::sort(sorted.begin(), sorted.end(),
            [](const TensorInfo *a, const TensorInfo *b) {
              return a->begin < b->begin ||
                     (a->begin == b->begin && a->end < b->end);
            });
  uint64_t cursor = 0;
  for (const TensorInfo *info : sorted) {
    if (info->begin != cursor)
      return fail(llvm::formatv("tensor '{0}' starts at data offset {1}, "
                                "expected {2} (overlap or hole)",
                                info->name, info->begin, cursor));
    cursor = info->end;
  }
  if (cursor != dataBytes)
    return fail(llvm::formatv("the tensors cover {0} bytes of data, the file "
                              "holds {1}",
                              cursor, dataBytes));
  for (size_t i = 0; i < result.infos.size(); ++i)
    result.byName[result.infos[i].name] = i;
  result.file = std::shared_ptr<llvm::MemoryBuffer>(std::move(*buffer));
  return result;
}

const TensorInfo *SafetensorsFile::find(llvm::StringRef name) const {
  auto it = byName.find(name.str());
  return it == byName.end() ? nullptr : &infos[it->second];
}

llvm::StringRef SafetensorsFile::data(const TensorInfo &info) const {
  return file->getBuffer().substr(dataStart + info.begin,
                                  info.end - info.begin);
}

llvm::Error SafetensorsFile::read(llvm::StringRef name, llvm::StringRef dtype,
                                  llvm::ArrayRef<int64_t> shape, void *out,
                                  uint64_t bytes) const {
  const TensorInfo *info = find(name);
  if (!info)
    return makeError(
        llvm::formatv("{0}: tensor '{1}' is missing", fileName, name));
  if (info->dtype != dtype)
    return makeError(llvm::formatv("{0}: tensor '{1}' has dtype {2}, the "
                                   "model expects {3}",
                                   fileName, name, info->dtype, dtype));
  if (llvm::ArrayRef<int64_t>(info->shape) != shape)
    return makeError(llvm::formatv("{0}: tensor '{1}' has shape {2}, the "
                                   "model expects {3}",
                                   fileName, name, formatShape(info->shape),
                                   formatShape(shape)));
  llvm::StringRef raw = data(*info);
  if (raw.size() != bytes)
    return makeError(llvm::formatv("{0}: tensor '{1}' holds {2} bytes, the "
                                   "destination {3}",
                                   fileName, name, raw.size(), bytes));
  auto checksum = meta.find(checksumKey(name));
  if (checksum != meta.end()) {
    std::string actual = hex64(llvm::xxh3_64bits(llvm::ArrayRef(
        reinterpret_cast<const uint8_t *>(raw.data()), raw.size())));
    if (actual != checksum->second)
      return makeError(llvm::formatv("{0}: tensor '{1}' is corrupt: its data "
                                     "checksum is {2}, the file recorded {3}",
                                     fileName, name, actual, checksum->second));
  }
  if (!raw.empty()) // Zero-element tensors (empty ZeRO ranges) copy nothing.
    std::memcpy(out, raw.data(), raw.size());
  return llvm::Error::success();
}
