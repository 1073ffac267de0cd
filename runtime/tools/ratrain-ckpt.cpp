//===- ratrain-ckpt.cpp - Inspect and verify checkpoints ------------------===//
//
//   ratrain-ckpt verify DIR          a checkpoint root (its `latest`) or a step
//                                    directory: indexes, shards, checksums
//   ratrain-ckpt list FILE           the tensors of one safetensors file
//   ratrain-ckpt export CHECKPOINT --config CONFIG -o OUT
//                                    a HuggingFace model directory (FP32
//                                    weights + CONFIG) from any checkpoint
// Errors print `error: <file>: <what>` and exit 1.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Support/CrashReport.h"
#include "ratrain/runtime/Checkpoint.h"
#include "ratrain/runtime/HFDirectory.h"
#include "ratrain/runtime/Safetensors.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace ratrain::rt;

static int usage() {
  llvm::errs() << "usage: ratrain-ckpt verify CHECKPOINT_DIR\n"
                  "       ratrain-ckpt list FILE.safetensors\n"
                  "       ratrain-ckpt export CHECKPOINT_DIR --config "
                  "CONFIG.json -o OUT_DIR\n";
  return 1;
}

/// `export CHECKPOINT --config CONFIG -o OUT` (options in any order).
static int exportCommand(int argc, char **argv) {
  std::string checkpoint, config, out;
  for (int i = 2; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    auto value = [&](std::string &into) {
      if (i + 1 >= argc)
        return false;
      into = argv[++i];
      return true;
    };
    if (arg == "--config") {
      if (!value(config))
        return usage();
    } else if (arg == "-o") {
      if (!value(out))
        return usage();
    } else if (!arg.starts_with("-") && checkpoint.empty()) {
      checkpoint = arg.str();
    } else {
      llvm::errs() << "error: export: unexpected argument '" << arg << "'\n";
      return usage();
    }
  }
  if (checkpoint.empty() || config.empty() || out.empty())
    return usage();
  auto summary = exportCheckpoint(checkpoint, config, out);
  if (!summary) {
    llvm::errs() << "error: " << llvm::toString(summary.takeError()) << "\n";
    return 1;
  }
  llvm::outs() << llvm::formatv("{0}: step {1}: {2} tensors ({3} bytes of "
                                "FP32) in {4} files, with {5}\n",
                                summary->directory, summary->step,
                                summary->tensors, summary->bytes,
                                summary->files, config);
  return 0;
}

int main(int argc, char **argv) {
  ratrain::InitTool init(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "export") == 0)
    return exportCommand(argc, argv);
  if (argc != 3 ||
      (std::strcmp(argv[1], "verify") != 0 && std::strcmp(argv[1], "list")))
    return usage();
  if (std::strcmp(argv[1], "verify") == 0) {
    auto summary = verifyCheckpoint(argv[2]);
    if (!summary) {
      llvm::errs() << "error: " << llvm::toString(summary.takeError()) << "\n";
      return 1;
    }
    llvm::outs() << llvm::formatv(
        "{0}: ok: step {1}, {2} data samples, pp {3} x dp {4}, {5} tensors "
        "({6} bytes) in {7} files, checksums verified\n",
        summary->directory, summary->step, summary->dataSamples, summary->pp,
        summary->dp, summary->tensors, summary->bytes, summary->files);
    return 0;
  }
  auto file = SafetensorsFile::open(argv[2]);
  if (!file) {
    llvm::errs() << "error: " << llvm::toString(file.takeError()) << "\n";
    return 1;
  }
  for (const TensorInfo &info : file->tensors())
    llvm::outs() << llvm::formatv("{0} {1} {2} [{3}, {4})\n", info.name,
                                  info.dtype, formatShape(info.shape),
                                  info.begin, info.end);
  for (const auto &[key, value] : file->metadata())
    if (!llvm::StringRef(key).starts_with("ratrain.xxh3."))
      llvm::outs() << llvm::formatv("metadata {0} = {1}\n", key, value);
  return 0;
}
