# Activation offload (docs/schedule.md, "Activation offload"): the tiny LLaMA
# on two pipeline stages with the stored activations of some decoder layers
# moved to the offload tier after each forward and reloaded before the
# backward. Offload only moves data, so the losses must equal those of the
# same plan without it bit for bit over RATRAIN_E2E_LONG_STEPS steps, and a
# checkpoint must resume bit-identically. Included from test/e2e/CMakeLists.txt after
# emit-cpp.cmake and offload.cmake, whose ratrain-emit-tiny-pp2 and
# ratrain-emit-tiny-bf16 (the plans without offload) are the references and
# whose host-storage.yaml is the storage-tier machine.
if(NOT COMMAND ratrain_add_emitted_program OR NOT TARGET ratrain-corpus OR
   NOT TARGET ratrain-emit-tiny-pp2 OR NOT TARGET ratrain-emit-tiny-bf16)
  return()
endif()

set(RATRAIN_ACT_OFFLOAD_STEPS ${RATRAIN_E2E_LONG_STEPS})
set(act_offload_model ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json)
set(act_offload_host ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml)
set(act_offload_storage ${CMAKE_CURRENT_BINARY_DIR}/offload/host-storage.yaml)
if(NOT EXISTS ${act_offload_storage})
  message(FATAL_ERROR "activation-offload.cmake: ${act_offload_storage} is "
                      "written by offload.cmake, which must come first")
endif()

# name | --dtype (empty: f32) | plan | reference | machine (empty: host.yaml)
# Every decoder layer offloaded to host memory and to storage files (the
# layers whose backward follows within the prefetch window stay in DDR);
# one layer per stage offloaded, the others fully recomputed (the
# reference stores them all: recompute reproduces them bit for bit); bf16.
set(act_offload_cases
  "host||clusters=2 global-batch=4 pp=2 act-offload=all|ratrain-emit-tiny-pp2|"
  "storage||clusters=2 global-batch=4 pp=2 act-offload=all|ratrain-emit-tiny-pp2|${act_offload_storage}"
  "mixed-recompute||clusters=2 global-batch=4 pp=2 recompute=full act-offload=1,1|ratrain-emit-tiny-pp2|"
  "host-bf16|bf16|clusters=2 global-batch=4 pp=2 act-offload=all|ratrain-emit-tiny-bf16|")
foreach(case ${act_offload_cases})
  string(REPLACE "|" ";" fields "${case}")
  list(GET fields 0 name)
  list(GET fields 1 dtype)
  list(GET fields 2 plan)
  list(GET fields 3 reference)
  list(GET fields 4 machine)
  if(NOT machine)
    set(machine ${act_offload_host})
  endif()
  set(target ratrain-act-offload-${name})
  set(dtype_args)
  if(dtype)
    set(dtype_args DTYPE ${dtype})
  endif()
  ratrain_add_emitted_program(${target}
    MODEL ${act_offload_model} MACHINE ${machine}
    PLAN "${plan}" ${dtype_args})
  add_test(NAME e2e.act-offload.${name}.compile
    COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
            --target ${target} ${reference} ratrain-corpus)
  set_tests_properties(e2e.act-offload.${name}.compile PROPERTIES
    TIMEOUT 600 LABELS "e2e" FIXTURES_SETUP ratrain-act-offload-${name}
    RESOURCE_LOCK ratrain-build-tree)
  add_test(NAME e2e.act-offload.${name}.equal-losses
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/equal-losses-test.sh
            ${MPIEXEC_EXECUTABLE} 2 $<TARGET_FILE:${target}>
            $<TARGET_FILE:${reference}> ${RATRAIN_CORPUS_TOKENS}
            ${RATRAIN_ACT_OFFLOAD_STEPS} "activation offload")
  set_tests_properties(e2e.act-offload.${name}.equal-losses PROPERTIES
    TIMEOUT 900 LABELS "e2e;mpi" PROCESSORS 2
    FIXTURES_REQUIRED ratrain-act-offload-${name})
  add_test(NAME e2e.act-offload.${name}.resume
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/emit-resume-test.sh
            ${MPIEXEC_EXECUTABLE} 2 $<TARGET_FILE:${target}>
            ${RATRAIN_CORPUS_TOKENS})
  set_tests_properties(e2e.act-offload.${name}.resume PROPERTIES
    TIMEOUT 600 LABELS "e2e;mpi" PROCESSORS 2
    FIXTURES_REQUIRED ratrain-act-offload-${name})
endforeach()
