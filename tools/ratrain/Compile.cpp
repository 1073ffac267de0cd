//===- Compile.cpp - ratrain compile --------------------------------------===//
//
// `ratrain compile MODEL.json --machine FILE [plan flags] -o EXE` builds a
// training executable; with `--bundle DIR` instead of `-o`, a folder that
// runs on any node with Open MPI (Bundle.cpp).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using llvm::StringRef;
namespace fs = llvm::sys::fs;

namespace ratrain::driver {

static const char *const kCompileHelp =
    R"(USAGE: ratrain compile MODEL.json --machine FILE [options] -o EXE
       ratrain compile MODEL.json --machine FILE [options] --bundle DIR

Runs import -> plan -> schedule-pipeline -> lower-to-mt3k -> mt3k-to-cpp with
ratrain-translate and ratrain-opt, then compiles the C++ program against
libratrain_program.so. Prints the chosen plan.

OPTIONS:
  -o EXE                the executable to write
  --bundle DIR          write DIR/program, the libraries it needs beyond the
                        system's and Open MPI's (DIR/lib, found through the
                        rpath $ORIGIN/lib) and the token file, to copy to and
                        run on any node with Open MPI:
                          mpirun -np N DIR/program --data DIR/<token file>
                        DIR must be absent, empty or an earlier bundle
  --data FILE           the token file a bundle carries (default: the build
                        tree's corpus, examples/data/corpus.tok)
  --keep-temps DIR      keep every stage's output in DIR
  -v, --verbose         print each command
)";

int compileCommand(const Toolchain &tools, llvm::ArrayRef<std::string> argv) {
  std::vector<StringRef> valueFlags(getPlanValueFlags().begin(),
                                    getPlanValueFlags().end());
  for (StringRef flag : {"-o", "--keep-temps", "--bundle", "--data"})
    valueFlags.push_back(flag);
  llvm::Expected<Args> args = parseArgs("compile", argv, valueFlags,
                                        {"--help", "-h", "-v", "--verbose"});
  if (!args)
    return fail(args.takeError());
  if (args->has("--help") || args->has("-h")) {
    llvm::outs() << kCompileHelp << "\n" << kPlanFlagsHelp;
    return 0;
  }
  if (!args->rest.empty())
    return fail("'--' is only for 'ratrain run' and 'ratrain plan'");
  llvm::Expected<CompileOptions> options =
      getCompileOptions(tools, *args, "compile");
  if (!options)
    return fail(options.takeError());
  std::optional<std::string> exe = args->get("-o");
  std::optional<std::string> bundle = args->get("--bundle");
  if (exe && bundle)
    return fail("-o EXE and --bundle DIR exclude each other (a bundle's "
                "executable is DIR/program)");
  if (!exe && !bundle)
    return fail("-o EXE or --bundle DIR is required");

  // A bundle's folder and token file are checked before anything is built.
  std::string data;
  if (bundle) {
    if (llvm::Expected<std::vector<std::string>> previous =
            checkBundleDir(*bundle);
        !previous)
      return fail(previous.takeError());
    if (std::optional<std::string> file = args->get("--data")) {
      data = *file;
    } else if (llvm::Expected<ProgramBuild> build =
                   loadProgramBuild(tools.description)) {
      data = build->corpus;
    } else {
      return fail(build.takeError());
    }
    if (!data.empty() && (!fs::exists(data) || fs::is_directory(data)))
      return fail(data + ": no such data file (--data FILE: a token file from "
                         "ratrain-tokenize)");
  } else if (args->get("--data")) {
    return fail("--data is for --bundle (the token file a bundle carries)");
  }

  std::string workDir;
  bool keep = false;
  if (std::optional<std::string> keepDir = args->get("--keep-temps")) {
    if (std::error_code ec = fs::create_directories(*keepDir))
      return fail(
          llvm::formatv("--keep-temps {0}: {1}", *keepDir, ec.message()));
    workDir = *keepDir;
    keep = true;
  } else {
    llvm::SmallString<256> dir;
    if (std::error_code ec = fs::createUniqueDirectory("ratrain", dir))
      return fail("cannot create a temporary folder: " + ec.message());
    workDir = std::string(dir);
  }
  int status = bundle ? writeBundle(tools, *options, workDir, *bundle, data)
                      : compileProgram(tools, *options, workDir, *exe);
  if (!keep)
    fs::remove_directories(workDir);
  if (status == 0 && exe)
    note("wrote " + *exe);
  return status;
}

} // namespace ratrain::driver
