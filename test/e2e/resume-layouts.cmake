# Resume into another layout (issue 16; docs/runtime.md, "Checkpoints"): the
# tiny LLaMA (FP32, global batch 8) saved under pp 2 x dp 2 with ZeRO-1
# resumes as pp 1 x dp 2 with ZeRO-2 and as pp 4 x dp 1 (the checkpoint's
# ZeRO ranges re-assembled into the new ranks' ranges or whole tensors); the
# resumed losses equal the uninterrupted pp 2 x dp 2 run's within 1e-6
# (relative: the layouts sum in other orders). Included from
# test/e2e/CMakeLists.txt after equivalence.cmake (its 4-cluster host file).
if(NOT COMMAND ratrain_add_emitted_program OR NOT TARGET ratrain-corpus OR
   NOT DEFINED equiv_host4)
  return()
endif()

set(RATRAIN_RESUME_LAYOUT_STEPS 5)
set(reshard_model ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json)
set(reshard_targets)
foreach(layout "pp2xdp2-zero1|${equiv_host4}|clusters=4 pp=2 zero=1"
               "pp1xdp2-zero2|${PROJECT_SOURCE_DIR}/examples/machines/host.yaml|clusters=2 pp=1 zero=2"
               "pp4|${equiv_host4}|clusters=4 pp=4")
  string(REPLACE "|" ";" fields "${layout}")
  list(GET fields 0 name)
  list(GET fields 1 machine)
  list(GET fields 2 plan)
  ratrain_add_emitted_program(ratrain-reshard-${name}
    MODEL ${reshard_model} MACHINE ${machine}
    PLAN "${plan} global-batch=8" DEPENDS ${machine})
  list(APPEND reshard_targets ratrain-reshard-${name})
endforeach()
add_test(NAME e2e.resume-layout.compile
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
          --target ${reshard_targets} ratrain-corpus)
set_tests_properties(e2e.resume-layout.compile PROPERTIES TIMEOUT 900
  LABELS "e2e" FIXTURES_SETUP ratrain-resume-layout
  RESOURCE_LOCK ratrain-build-tree)
foreach(other "pp1xdp2-zero2|2" "pp4|4")
  string(REPLACE "|" ";" fields "${other}")
  list(GET fields 0 name)
  list(GET fields 1 ranks)
  add_test(NAME e2e.resume-layout.pp2xdp2-zero1~${name}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/resume-layout-test.sh
            ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:ratrain-reshard-pp2xdp2-zero1> 4
            $<TARGET_FILE:ratrain-reshard-${name}> ${ranks}
            ${RATRAIN_CORPUS_TOKENS} ${RATRAIN_RESUME_LAYOUT_STEPS} 1e-6)
  set_tests_properties(e2e.resume-layout.pp2xdp2-zero1~${name} PROPERTIES
    TIMEOUT 600 LABELS "e2e;mpi" PROCESSORS 4
    FIXTURES_REQUIRED ratrain-resume-layout)
endforeach()
