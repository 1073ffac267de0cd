//===- Toolchain.cpp - The tools and the library next to the driver -------===//
//
// The driver runs its sibling tools (ratrain-translate, ratrain-opt,
// ratrain-plan) and compiles emitted programs as the build description
// ratrain-program.txt next to it says (written by CMake in runtime/program).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

using llvm::StringRef;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace ratrain::driver {

std::string joinPath(StringRef dir, StringRef name) {
  llvm::SmallString<256> file(dir);
  path::append(file, name);
  return std::string(file);
}

Toolchain findToolchain(const char *argv0) {
  Toolchain tools;
  static int anchor;
  tools.self = fs::getMainExecutable(argv0, &anchor);
  tools.binDir = path::parent_path(tools.self).str();
  tools.translate = joinPath(tools.binDir, "ratrain-translate");
  tools.opt = joinPath(tools.binDir, "ratrain-opt");
  tools.planTool = joinPath(tools.binDir, "ratrain-plan");
  tools.calibrate = joinPath(tools.binDir, "ratrain-calibrate");
  tools.description = joinPath(tools.binDir, "ratrain-program.txt");
  return tools;
}

llvm::Error requireFile(StringRef file, StringRef what) {
  if (fs::exists(file))
    return llvm::Error::success();
  return makeError(llvm::formatv(
      "{0} not found at {1} (it is built with the driver)", what, file));
}

static std::vector<std::string> splitList(StringRef text, char separator) {
  llvm::SmallVector<StringRef> parts;
  text.split(parts, separator, -1, /*KeepEmpty=*/false);
  std::vector<std::string> result;
  for (StringRef part : parts)
    if (!part.trim().empty())
      result.push_back(part.trim().str());
  return result;
}

llvm::Expected<ProgramBuild> loadProgramBuild(StringRef file) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(file, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(
        buffer.getError(), llvm::formatv("{0}: cannot read the program build "
                                         "description: {1}",
                                         file, buffer.getError().message()));
  ProgramBuild build;
  llvm::SmallVector<StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (StringRef line : lines) {
    if (line.trim().empty() || line.starts_with("#"))
      continue;
    auto [key, value] = line.split('=');
    if (key == "cxx")
      build.cxx = value.trim().str();
    else if (key == "cxx_flags")
      build.cxxFlags = splitList(value, ' ');
    else if (key == "include_dirs")
      build.includeDirs = splitList(value, ';');
    else if (key == "compile_definitions")
      build.definitions = splitList(value, ';');
    else if (key == "compile_options")
      build.options = splitList(value, ';');
    else if (key == "link_flags")
      build.linkFlags = splitList(value, ' ');
    else if (key == "libraries")
      build.libraries = splitList(value, ';');
    else if (key == "rpath")
      build.rpath = splitList(value, ';');
    else if (key == "corpus")
      build.corpus = value.trim().str();
    else
      return makeError(llvm::formatv("{0}: unknown key '{1}'", file, key));
  }
  if (build.cxx.empty() || build.libraries.empty())
    return makeError(llvm::formatv("{0}: no compiler or no libraries", file));
  return build;
}

int execute(llvm::ArrayRef<std::string> argv, StringRef stdoutFile,
            const std::optional<std::vector<std::string>> &env,
            std::string &message) {
  std::vector<StringRef> refs(argv.begin(), argv.end());
  std::optional<StringRef> redirects[] = {std::nullopt, std::nullopt,
                                          std::nullopt};
  if (!stdoutFile.empty())
    redirects[1] = stdoutFile;
  std::optional<std::vector<StringRef>> envRefs;
  if (env)
    envRefs.emplace(env->begin(), env->end());
  std::optional<llvm::ArrayRef<StringRef>> envArg;
  if (envRefs)
    envArg = *envRefs;
  return llvm::sys::ExecuteAndWait(argv[0], refs, envArg, redirects, 0, 0,
                                   &message);
}

} // namespace ratrain::driver
