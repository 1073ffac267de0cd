//===- Program.cpp - The shared library of emitted training programs ------===//
//
// libratrain_program.so bundles ratrain_runtime and ratrain_kernels (linked
// whole into it, see CMakeLists.txt) for programs that the `ratrain` driver
// compiles without CMake. This file only gives the library a name to check.
//
//===----------------------------------------------------------------------===//

/// The version of the program library's interface, for tools that load it.
extern "C" int ratrain_program_interface_version() { return 1; }
