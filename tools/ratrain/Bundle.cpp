//===- Bundle.cpp - ratrain compile --bundle ------------------------------===//
//
// A bundle is a folder that trains on a node with only Open MPI installed:
//
//   DIR/program             the executable, rpath $ORIGIN/lib
//   DIR/lib/<soname>        every library the executable loads that is
//                           neither a system library (libc, libm, libstdc++,
//                           libgcc_s, the dynamic loader, ...) nor Open MPI or
//                           a library Open MPI itself loads: today
//                           libratrain_program.so alone
//   DIR/<token file>        the training data (--data, default: the build
//                           tree's corpus)
//   DIR/ratrain-bundle.txt  the manifest: how to run it, the plan and every
//                           file the bundle wrote
//
// The libraries are what `ldd` resolves for the executable, looked up in the
// build tree's library folders. The driver writes into an absent or empty
// folder or over an earlier bundle (only the files its manifest lists), and
// refuses anything else. After writing, `ldd` must find every bundled library
// inside DIR/lib.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

extern char **environ;

using llvm::StringRef;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace ratrain::driver {

const char *const kBundleManifest = "ratrain-bundle.txt";

/// The executable's name in a bundle.
static const char *const kBundleProgram = "program";

//===----------------------------------------------------------------------===//
// The bundle folder
//===----------------------------------------------------------------------===//

/// Reads the `file: NAME` lines of a bundle manifest. Every name is a path
/// inside the bundle (relative, without `..`).
static llvm::Expected<std::vector<std::string>>
readManifest(StringRef manifest) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(manifest, /*IsText=*/true);
  if (!buffer)
    return makeError(
        llvm::formatv("{0}: {1}", manifest, buffer.getError().message()));
  std::vector<std::string> files;
  llvm::SmallVector<StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (StringRef line : lines) {
    if (!line.consume_front("file:"))
      continue;
    StringRef name = line.trim();
    if (name.empty() || path::is_absolute(name) ||
        llvm::is_contained(llvm::make_range(path::begin(name), path::end(name)),
                           ".."))
      return makeError(llvm::formatv(
          "{0}: '{1}' is not a file inside the bundle", manifest, name));
    files.push_back(name.str());
  }
  return files;
}

llvm::Expected<std::vector<std::string>> checkBundleDir(StringRef dir) {
  if (!fs::exists(dir))
    return std::vector<std::string>();
  if (!fs::is_directory(dir))
    return makeError(llvm::formatv(
        "--bundle {0}: exists and is not a folder; refusing to overwrite it",
        dir));
  std::string manifest = joinPath(dir, kBundleManifest);
  if (fs::exists(manifest))
    return readManifest(manifest);
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec)
    return makeError(llvm::formatv("--bundle {0}: {1}", dir, ec.message()));
  if (it != fs::directory_iterator())
    return makeError(llvm::formatv(
        "--bundle {0}: the folder is not empty and is not a ratrain bundle "
        "(no {1}); refusing to write into it",
        dir, kBundleManifest));
  return std::vector<std::string>();
}

//===----------------------------------------------------------------------===//
// The libraries a program loads
//===----------------------------------------------------------------------===//

namespace {
/// One line of `ldd`: a library's name (its soname) and where the dynamic
/// loader found it (empty when it did not).
struct LoadedLibrary {
  std::string name;
  std::string path;
};
} // namespace

/// The environment of the driver without LD_LIBRARY_PATH, with `searchPath`
/// in front of the driver's LD_LIBRARY_PATH when `searchPath` is not empty.
static std::vector<std::string>
makeLddEnvironment(llvm::ArrayRef<std::string> searchPath) {
  std::vector<std::string> env;
  std::string libraryPath = llvm::join(searchPath, ":");
  for (char **entry = environ; entry && *entry; ++entry) {
    StringRef variable(*entry);
    if (!variable.consume_front("LD_LIBRARY_PATH=")) {
      env.push_back(variable.str());
      continue;
    }
    if (!searchPath.empty() && !variable.empty())
      libraryPath += ":" + variable.str();
  }
  if (!libraryPath.empty())
    env.push_back("LD_LIBRARY_PATH=" + libraryPath);
  return env;
}

/// Runs `ldd file` in `env` and lists the libraries it loads.
static llvm::Expected<std::vector<LoadedLibrary>>
listLibraries(StringRef file, StringRef workDir,
              const std::vector<std::string> &env) {
  llvm::ErrorOr<std::string> ldd = llvm::sys::findProgramByName("ldd");
  if (!ldd)
    return makeError("ldd not found on PATH (it lists the libraries a "
                     "bundle needs)");
  std::string out = joinPath(workDir, "ldd.txt");
  std::string message;
  int status = execute({*ldd, file.str()}, out, env, message);
  if (status != 0)
    return makeError(llvm::formatv("ldd {0} failed{1}{2}", file,
                                   message.empty() ? "" : ": ", message));
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(out, /*IsText=*/true);
  if (!buffer)
    return makeError(
        llvm::formatv("{0}: {1}", out, buffer.getError().message()));
  std::vector<LoadedLibrary> libraries;
  llvm::SmallVector<StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (StringRef line : lines) {
    line = line.trim();
    if (line.empty() || line.starts_with("statically linked"))
      continue;
    // `NAME => PATH (0x...)`, `NAME => not found`, or `NAME (0x...)` for the
    // vDSO and the dynamic loader.
    LoadedLibrary library;
    auto [name, resolved] = line.split(" => ");
    if (line.contains(" => ")) {
      library.name = name.trim().str();
      if (!resolved.starts_with("not found"))
        library.path = resolved.split(" (").first.trim().str();
    } else {
      library.name = line.split(" (").first.trim().str();
      library.path = library.name;
    }
    libraries.push_back(std::move(library));
  }
  return libraries;
}

/// Libraries every Linux node has: the C and C++ runtimes and the loader.
static bool isSystemLibrary(StringRef name) {
  name = path::filename(name);
  for (StringRef prefix :
       {"linux-vdso.so", "linux-gate.so", "ld-linux", "libc.so", "libm.so",
        "libmvec.so", "libstdc++.so", "libgcc_s.so", "libpthread.so",
        "libdl.so", "librt.so", "libutil.so", "libresolv.so"})
    if (name.starts_with(prefix))
      return true;
  return false;
}

/// Open MPI's own libraries.
static bool isMPILibrary(StringRef name) {
  return name.starts_with("libmpi") || name.starts_with("libopen-");
}

/// The libraries of `libraries` to bundle: all but the system's, Open MPI's
/// and what Open MPI's libraries load themselves (hwloc, libevent, zlib...),
/// which a node with Open MPI has.
static llvm::Expected<std::vector<LoadedLibrary>>
selectBundled(llvm::ArrayRef<LoadedLibrary> libraries, StringRef workDir,
              const std::vector<std::string> &env) {
  llvm::StringSet<> provided;
  for (const LoadedLibrary &library : libraries) {
    if (library.path.empty())
      return makeError(llvm::formatv(
          "the program needs {0}, which the dynamic loader does not find",
          library.name));
    if (!isMPILibrary(library.name))
      continue;
    provided.insert(library.name);
    llvm::Expected<std::vector<LoadedLibrary>> mpiLibraries =
        listLibraries(library.path, workDir, env);
    if (!mpiLibraries)
      return mpiLibraries.takeError();
    for (const LoadedLibrary &dependency : *mpiLibraries)
      provided.insert(dependency.name);
  }
  std::vector<LoadedLibrary> bundled;
  for (const LoadedLibrary &library : libraries)
    if (!isSystemLibrary(library.name) && !provided.contains(library.name))
      bundled.push_back(library);
  return bundled;
}

//===----------------------------------------------------------------------===//
// Writing the bundle
//===----------------------------------------------------------------------===//

/// Copies `from` to `to` with the permissions `perms`.
static llvm::Error copyFile(StringRef from, StringRef to, fs::perms perms) {
  if (std::error_code ec = fs::copy_file(from, to))
    return makeError(
        llvm::formatv("cannot copy {0} to {1}: {2}", from, to, ec.message()));
  if (std::error_code ec = fs::setPermissions(to, perms))
    return makeError(llvm::formatv("{0}: {1}", to, ec.message()));
  return llvm::Error::success();
}

int writeBundle(const Toolchain &tools, CompileOptions &options,
                StringRef workDir, StringRef dir, StringRef data) {
  llvm::Expected<std::vector<std::string>> previous = checkBundleDir(dir);
  if (!previous)
    return fail(previous.takeError());
  llvm::Expected<ProgramBuild> build = loadProgramBuild(tools.description);
  if (!build)
    return fail(build.takeError());

  // The executable finds its libraries in lib/ next to it. DT_RPATH, not
  // DT_RUNPATH: it applies to the libraries' own dependencies too.
  LinkMode link;
  link.rpath = std::vector<std::string>{"$ORIGIN/lib"};
  link.linkFlags.push_back("-Wl,--disable-new-dtags");
  std::string exe = joinPath(workDir, kBundleProgram);
  if (int status = compileProgram(tools, options, workDir, exe, link))
    return status;

  // What it loads, looked up in the build tree.
  std::vector<std::string> buildEnv = makeLddEnvironment(build->rpath);
  llvm::Expected<std::vector<LoadedLibrary>> loaded =
      listLibraries(exe, workDir, buildEnv);
  if (!loaded)
    return fail(loaded.takeError());
  llvm::Expected<std::vector<LoadedLibrary>> bundled =
      selectBundled(*loaded, workDir, buildEnv);
  if (!bundled)
    return fail(bundled.takeError());

  // The files to write, each checked against what is there.
  std::vector<std::pair<std::string, std::string>> copies = {
      {exe, kBundleProgram}};
  for (const LoadedLibrary &library : *bundled)
    copies.push_back({library.path, "lib/" + library.name});
  std::string dataName;
  if (!data.empty()) {
    dataName = path::filename(data).str();
    if (dataName == kBundleProgram || dataName == "lib" ||
        dataName == kBundleManifest)
      return fail(llvm::formatv("--data {0}: a bundle cannot carry a token "
                                "file named '{1}'",
                                data, dataName));
    copies.push_back({data.str(), dataName});
  }
  std::string libDir = joinPath(dir, "lib");
  if (fs::exists(libDir) && !fs::is_directory(libDir))
    return fail(llvm::formatv("--bundle {0}: {1} is not a folder; refusing "
                              "to overwrite it",
                              dir, libDir));
  for (const auto &copy : copies) {
    std::string target = joinPath(dir, copy.second);
    if (fs::exists(target) && !llvm::is_contained(*previous, copy.second))
      return fail(llvm::formatv("--bundle {0}: {1} exists and is not a file "
                                "of the earlier bundle; refusing to "
                                "overwrite it",
                                dir, target));
  }

  // Remove the earlier bundle's files, then write the new ones.
  for (const std::string &name : *previous)
    fs::remove(joinPath(dir, name));
  fs::remove(joinPath(dir, kBundleManifest));
  if (std::error_code ec = fs::create_directories(libDir))
    return fail(llvm::formatv("--bundle {0}: {1}", dir, ec.message()));
  const fs::perms executable = fs::perms(0755), plain = fs::perms(0644);
  for (const auto &copy : copies) {
    bool isData = copy.second == dataName;
    if (llvm::Error error = copyFile(copy.first, joinPath(dir, copy.second),
                                     isData ? plain : executable))
      return fail(std::move(error));
  }

  std::string plan;
  if (auto text = llvm::MemoryBuffer::getFile(joinPath(workDir, "plan.txt"),
                                              /*IsText=*/true))
    plan = (*text)->getBuffer().trim().str();
  std::string runLine = llvm::formatv("mpirun -np {0} {1}/{2}", options.ranks,
                                      dir, kBundleProgram);
  if (!dataName.empty())
    runLine += llvm::formatv(" --data {0}/{1}", dir, dataName).str();
  {
    std::string manifest = joinPath(dir, kBundleManifest);
    std::error_code ec;
    llvm::raw_fd_ostream os(manifest, ec, fs::OF_Text);
    if (ec)
      return fail(llvm::formatv("{0}: {1}", manifest, ec.message()));
    os << "# A RATrain training program, written by 'ratrain compile "
          "--bundle' (docs/driver.md).\n"
       << "# It needs Open MPI and the C/C++ runtime libraries on the node, "
          "nothing else. Run it with\n"
       << "#   mpirun -np " << options.ranks << " BUNDLE/" << kBundleProgram
       << (dataName.empty() ? "" : " --data BUNDLE/" + dataName)
       << " [--steps N] [--log FILE] [--ckpt DIR] ...\n"
       << "# where BUNDLE is this folder, wherever it was copied to.\n"
       << "model: " << path::filename(options.model) << "\n"
       << "ranks: " << options.ranks << "\n"
       << "plan: " << plan << "\n";
    for (const auto &copy : copies)
      os << "file: " << copy.second << "\n";
  }

  // The bundle must load from itself alone.
  llvm::Expected<std::vector<LoadedLibrary>> check = listLibraries(
      joinPath(dir, kBundleProgram), workDir, makeLddEnvironment({}));
  if (!check)
    return fail(check.takeError());
  llvm::SmallString<256> realLibDir;
  if (std::error_code ec = fs::real_path(libDir, realLibDir))
    return fail(llvm::formatv("{0}: {1}", libDir, ec.message()));
  for (const LoadedLibrary &library : *bundled) {
    auto it = llvm::find_if(*check, [&](const LoadedLibrary &found) {
      return found.name == library.name;
    });
    llvm::SmallString<256> where;
    if (it == check->end() || it->path.empty() ||
        fs::real_path(it->path, where) ||
        path::parent_path(where) != StringRef(realLibDir))
      return fail(llvm::formatv("the bundle's program does not load {0} from "
                                "{1}/lib",
                                library.name, dir));
  }

  std::vector<std::string> names;
  for (const LoadedLibrary &library : *bundled)
    names.push_back(library.name);
  note(llvm::formatv("wrote the bundle {0}: {1}, lib/ ({2}){3}", dir,
                     kBundleProgram,
                     names.empty() ? "no libraries" : llvm::join(names, ", "),
                     dataName.empty() ? "" : ", " + dataName));
  note("run it with: " + runLine);
  return 0;
}

} // namespace ratrain::driver
