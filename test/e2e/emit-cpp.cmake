# Emitted training programs (docs/emitter.md): `ratrain-translate
# --mt3k-to-cpp` turns lowered mt3k programs into C++ that is built here
# against the runtime and the Halide kernels, then run under mpirun.
# Included from test/e2e/CMakeLists.txt.
if(NOT (TARGET ratrain_kernels AND TARGET ratrain_runtime AND
        TARGET ratrain-translate AND TARGET ratrain-opt))
  return()
endif()

set(RATRAIN_EMIT_DIR ${CMAKE_CURRENT_SOURCE_DIR})

# ratrain_add_emitted_program(<target> MLIR <mt3k module>)
# ratrain_add_emitted_program(<target> MODEL <config.json> MACHINE <file>
#                             PLAN <--ratrain-plan options> [DTYPE bf16|f16]
#                             [POLICY ratrain|gpu-style] [SPLIT_BACKWARD]
#                             [SCHEDULE 1f1b|interleaved-1f1b|zb-h1|zbv]
#                             [DEPENDS <files or targets the MACHINE needs>])
# Emits the C++ program of an mt3k module (or of a model lowered by
# import -> plan -> schedule -> lower-to-mt3k, with the lifecycle POLICY for
# both the plan and the schedule; default ratrain; SPLIT_BACKWARD: every
# backward split into its input and weight parts) and builds it into <target>,
# linked with ratrain_runtime and ratrain_kernels. The target is not built by
# default (`ninja <target>`); the generated source is <target>.cpp in the
# current binary directory.
function(ratrain_add_emitted_program target)
  cmake_parse_arguments(ARG "SPLIT_BACKWARD"
                        "MLIR;MODEL;MACHINE;PLAN;DTYPE;POLICY;SCHEDULE"
                        "DEPENDS" ${ARGN})
  set(cpp ${CMAKE_CURRENT_BINARY_DIR}/${target}.cpp)
  if(ARG_MLIR)
    add_custom_command(OUTPUT ${cpp}
      COMMAND ratrain-translate --mt3k-to-cpp ${ARG_MLIR} -o ${cpp}
      DEPENDS ratrain-translate ${ARG_MLIR}
      COMMENT "Emitting ${target}.cpp")
  else()
    set(mlir ${CMAKE_CURRENT_BINARY_DIR}/${target}.mlir)
    set(options)
    if(ARG_DTYPE)
      list(APPEND options --dtype ${ARG_DTYPE})
    endif()
    if(ARG_POLICY)
      list(APPEND options --policy ${ARG_POLICY})
    endif()
    if(ARG_SPLIT_BACKWARD)
      list(APPEND options --split-backward true)
    endif()
    if(ARG_SCHEDULE)
      list(APPEND options --schedule ${ARG_SCHEDULE})
    endif()
    add_custom_command(OUTPUT ${cpp}
      COMMAND ${RATRAIN_EMIT_DIR}/emit-lower.sh
              $<TARGET_FILE:ratrain-translate> $<TARGET_FILE:ratrain-opt>
              ${ARG_MODEL} ${ARG_MACHINE} "${ARG_PLAN}" ${mlir} ${options}
      COMMAND ratrain-translate --mt3k-to-cpp ${mlir} -o ${cpp}
      DEPENDS ratrain-translate ratrain-opt ${ARG_MODEL} ${ARG_MACHINE}
              ${RATRAIN_EMIT_DIR}/emit-lower.sh ${ARG_DEPENDS}
      COMMENT "Lowering ${ARG_MODEL} and emitting ${target}.cpp")
  endif()
  add_executable(${target} EXCLUDE_FROM_ALL ${cpp})
  target_link_libraries(${target} PRIVATE ratrain_runtime ratrain_kernels)
endfunction()

# Every mt3k op kind (the lit test's module) compiles against the headers.
ratrain_add_emitted_program(ratrain-emit-ops
  MLIR ${PROJECT_SOURCE_DIR}/test/Target/emit-cpp.mlir)
add_test(NAME e2e.emit.ops.compile
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target ratrain-emit-ops)
set_tests_properties(e2e.emit.ops.compile PROPERTIES TIMEOUT 600
  LABELS "e2e" RESOURCE_LOCK ratrain-build-tree)

# The tiny LLaMA on two clusters (the planner picks pp 1 x dp 2, ZeRO-1):
# lowered, emitted, compiled, and trained for two steps on the corpus.
ratrain_add_emitted_program(ratrain-emit-tiny
  MODEL ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json
  MACHINE ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml
  PLAN "clusters=2 global-batch=8")
add_test(NAME e2e.emit.tiny.compile
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
          --target ratrain-emit-tiny ratrain-corpus)
set_tests_properties(e2e.emit.tiny.compile PROPERTIES TIMEOUT 600
  LABELS "e2e" FIXTURES_SETUP ratrain-emit-tiny
  RESOURCE_LOCK ratrain-build-tree)
add_test(NAME e2e.emit.tiny.train
  COMMAND ${RATRAIN_EMIT_DIR}/emit-run-test.sh ${MPIEXEC_EXECUTABLE} 2
          $<TARGET_FILE:ratrain-emit-tiny> ${RATRAIN_CORPUS_TOKENS} 2)
set_tests_properties(e2e.emit.tiny.train PROPERTIES TIMEOUT 600
  LABELS "e2e;mpi" PROCESSORS 2 FIXTURES_REQUIRED ratrain-emit-tiny)

# The same model as a two-stage pipeline (pp 2 x dp 1): activations and
# gradients travel between the stages' programs.
ratrain_add_emitted_program(ratrain-emit-tiny-pp2
  MODEL ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json
  MACHINE ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml
  PLAN "clusters=2 global-batch=4 pp=2")
add_test(NAME e2e.emit.tiny-pp2.compile
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
          --target ratrain-emit-tiny-pp2 ratrain-corpus)
set_tests_properties(e2e.emit.tiny-pp2.compile PROPERTIES TIMEOUT 600
  LABELS "e2e" FIXTURES_SETUP ratrain-emit-tiny-pp2
  RESOURCE_LOCK ratrain-build-tree)
add_test(NAME e2e.emit.tiny-pp2.train
  COMMAND ${RATRAIN_EMIT_DIR}/emit-run-test.sh ${MPIEXEC_EXECUTABLE} 2
          $<TARGET_FILE:ratrain-emit-tiny-pp2> ${RATRAIN_CORPUS_TOKENS} 2)
set_tests_properties(e2e.emit.tiny-pp2.train PROPERTIES TIMEOUT 600
  LABELS "e2e;mpi" PROCESSORS 2 FIXTURES_REQUIRED ratrain-emit-tiny-pp2)
# Inline progress: the helpers poll the runtime after every kernel.
add_test(NAME e2e.emit.tiny-pp2.train.inline
  COMMAND ${RATRAIN_EMIT_DIR}/emit-run-test.sh ${MPIEXEC_EXECUTABLE} 2
          $<TARGET_FILE:ratrain-emit-tiny-pp2> ${RATRAIN_CORPUS_TOKENS} 2)
set_tests_properties(e2e.emit.tiny-pp2.train.inline PROPERTIES TIMEOUT 600
  LABELS "e2e;mpi" PROCESSORS 2 FIXTURES_REQUIRED ratrain-emit-tiny-pp2
  ENVIRONMENT "RATRAIN_PROGRESS=inline")
# The per-op trace (--trace): Perfetto's schema, every kernel call of a step
# once, the schedule ops' spans named as the simulator's tasks, and the
# simulator's side-by-side comparison (ratrain-sim --measured-trace).
if(TARGET ratrain-sim)
add_test(NAME e2e.emit.tiny-pp2.trace
  COMMAND ${RATRAIN_EMIT_DIR}/trace-test.sh ${MPIEXEC_EXECUTABLE} 2
          $<TARGET_FILE:ratrain-emit-tiny-pp2> ${RATRAIN_CORPUS_TOKENS}
          $<TARGET_FILE:ratrain-translate> $<TARGET_FILE:ratrain-opt>
          $<TARGET_FILE:ratrain-sim>
          ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json
          ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml
          "clusters=2 global-batch=4 pp=2")
set_tests_properties(e2e.emit.tiny-pp2.trace PROPERTIES TIMEOUT 600
  LABELS "e2e;mpi" PROCESSORS 2 FIXTURES_REQUIRED ratrain-emit-tiny-pp2)
endif()
# Checkpoints: save at step 2, resume, bit-identical steps 3 and 4.
add_test(NAME e2e.emit.tiny-pp2.resume
  COMMAND ${RATRAIN_EMIT_DIR}/emit-resume-test.sh ${MPIEXEC_EXECUTABLE} 2
          $<TARGET_FILE:ratrain-emit-tiny-pp2> ${RATRAIN_CORPUS_TOKENS})
set_tests_properties(e2e.emit.tiny-pp2.resume PROPERTIES TIMEOUT 600
  LABELS "e2e;mpi" PROCESSORS 2 FIXTURES_REQUIRED ratrain-emit-tiny-pp2)

# A bf16 model (16-bit views, activations and gradients; fp32 masters): the
# helpers stage 16-bit operands through fp32 for the host kernels.
ratrain_add_emitted_program(ratrain-emit-tiny-bf16
  MODEL ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json
  MACHINE ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml
  PLAN "clusters=2 global-batch=4 pp=2" DTYPE bf16)
add_test(NAME e2e.emit.tiny-bf16.compile
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
          --target ratrain-emit-tiny-bf16 ratrain-corpus)
set_tests_properties(e2e.emit.tiny-bf16.compile PROPERTIES TIMEOUT 600
  LABELS "e2e" FIXTURES_SETUP ratrain-emit-tiny-bf16
  RESOURCE_LOCK ratrain-build-tree)
add_test(NAME e2e.emit.tiny-bf16.train
  COMMAND ${RATRAIN_EMIT_DIR}/emit-run-test.sh ${MPIEXEC_EXECUTABLE} 2
          $<TARGET_FILE:ratrain-emit-tiny-bf16> ${RATRAIN_CORPUS_TOKENS} 2)
set_tests_properties(e2e.emit.tiny-bf16.train PROPERTIES TIMEOUT 600
  LABELS "e2e;mpi" PROCESSORS 2 FIXTURES_REQUIRED ratrain-emit-tiny-bf16)
add_test(NAME e2e.emit.tiny-bf16.resume
  COMMAND ${RATRAIN_EMIT_DIR}/emit-resume-test.sh ${MPIEXEC_EXECUTABLE} 2
          $<TARGET_FILE:ratrain-emit-tiny-bf16> ${RATRAIN_CORPUS_TOKENS})
set_tests_properties(e2e.emit.tiny-bf16.resume PROPERTIES TIMEOUT 600
  LABELS "e2e;mpi" PROCESSORS 2 FIXTURES_REQUIRED ratrain-emit-tiny-bf16)
