# Split backward (docs/schedule.md, "Split backward"): the tiny LLaMA
# compiled with every backward split into its input part and its weight
# part (--ratrain-schedule-pipeline=split-backward=true, each W right after
# its I) trains RATRAIN_EQUIV_STEPS steps with losses bit for bit equal to
# the same plan's program with the fused backward (equal-losses-test.sh).
# The references are equivalence.cmake's programs (and emit-cpp.cmake's
# bf16 pipeline); included from test/e2e/CMakeLists.txt after them.
if(NOT COMMAND ratrain_add_emitted_program OR NOT TARGET ratrain-corpus OR
   NOT TARGET ratrain-equiv-single-ratrain)
  return()
endif()

set(split_model ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json)
set(split_host ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml)
# name | ranks | --dtype (empty: f32) | machine | plan | policy (empty: the
# default) | reference program
set(split_cases
  "single|1||${split_host}|clusters=1 global-batch=4|ratrain|ratrain-equiv-single-ratrain"
  "pp2|2||${split_host}|clusters=2 pp=2 global-batch=4|ratrain|ratrain-equiv-pp2-ratrain"
  "bf16-pp2|2|bf16|${split_host}|clusters=2 global-batch=4 pp=2||ratrain-emit-tiny-bf16")
if(TARGET ratrain-equiv-pp2xdp2-ratrain)
  list(APPEND split_cases
    "pp2xdp2|4||${equiv_host4}|clusters=4 pp=2 zero=0 global-batch=4|ratrain|ratrain-equiv-pp2xdp2-ratrain")
endif()

foreach(case ${split_cases})
  string(REPLACE "|" ";" fields "${case}")
  list(GET fields 0 name)
  list(GET fields 1 ranks)
  list(GET fields 2 dtype)
  list(GET fields 3 machine)
  list(GET fields 4 plan)
  list(GET fields 5 policy)
  list(GET fields 6 reference)
  set(target ratrain-split-backward-${name})
  set(options)
  if(dtype)
    list(APPEND options DTYPE ${dtype})
  endif()
  if(policy)
    list(APPEND options POLICY ${policy})
  endif()
  ratrain_add_emitted_program(${target} SPLIT_BACKWARD
    MODEL ${split_model} MACHINE ${machine} PLAN "${plan}" ${options})
  add_test(NAME e2e.split-backward.${name}.compile
    COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
            --target ${target} ${reference} ratrain-corpus)
  set_tests_properties(e2e.split-backward.${name}.compile PROPERTIES
    TIMEOUT 600 LABELS "e2e" FIXTURES_SETUP ratrain-split-backward-${name}
    RESOURCE_LOCK ratrain-build-tree)
  add_test(NAME e2e.split-backward.${name}.equal-losses
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/equal-losses-test.sh
            ${MPIEXEC_EXECUTABLE} ${ranks} $<TARGET_FILE:${target}>
            $<TARGET_FILE:${reference}> ${RATRAIN_CORPUS_TOKENS}
            ${RATRAIN_EQUIV_STEPS} "the split backward")
  set_tests_properties(e2e.split-backward.${name}.equal-losses PROPERTIES
    TIMEOUT 600 LABELS "e2e;mpi" PROCESSORS ${ranks}
    FIXTURES_REQUIRED ratrain-split-backward-${name})
endforeach()
