# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "RATRAIN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs", "unit", "e2e"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ratrain_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%examples", os.path.join(config.ratrain_src_root, "examples")))
llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.ratrain_tools_dir, config.llvm_tools_dir]
# The runtime's tools (ratrain-tokenize, ratrain-ckpt): tests REQUIRES: runtime.
if config.ratrain_enable_runtime.upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("runtime")
    llvm_config.add_tool_substitutions(["ratrain-tokenize", "ratrain-ckpt"], tool_dirs)
# The driver's compile/run commands need libratrain_program.so and its build
# description (runtime and kernels on; not in the sanitizer build): REQUIRES: program.
if os.path.exists(os.path.join(config.ratrain_tools_dir, "ratrain-program.txt")):
    config.available_features.add("program")
tools = ["ratrain-opt", "ratrain-translate", "ratrain-plan", "ratrain-sim", "ratrain"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
# FileCheck, not, count, split-file come from llvm-22.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.ratrain_tools_dir, append_path=True)
