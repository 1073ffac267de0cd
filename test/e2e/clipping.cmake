# Global gradient-norm clipping (docs/schedule.md, "Gradient clipping"):
# the tiny Llama-3.2 (tied embeddings) clipped to norm 0.5 on 2 pipeline
# stages and on one stage with ZeRO-1 over 2 replicas, and with a norm no
# step reaches (1e9) on 2 stages. clip-test.sh checks that the two layouts
# log the same global norms and losses, that the unreachable norm trains
# bit for bit as the unclipped program of models.cmake (the held updates
# change the schedule, not the arithmetic), and that clipping changes the
# losses from the second step on.
# Included from test/e2e/CMakeLists.txt after models.cmake.
if(NOT TARGET ratrain-emit-tiny-llama-3.2)
  return()
endif()

set(clip_targets)
foreach(case "pp2|pp=2 max-grad-norm=0.5" "zero1|pp=1 zero=1 max-grad-norm=0.5"
             "off|pp=2 max-grad-norm=1e9")
  string(REPLACE "|" ";" fields "${case}")
  list(GET fields 0 name)
  list(GET fields 1 plan)
  ratrain_add_emitted_program(ratrain-emit-clip-${name}
    MODEL ${CMAKE_CURRENT_SOURCE_DIR}/Inputs/models/tiny-llama-3.2.json
    MACHINE ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml
    PLAN "clusters=2 global-batch=8 ${plan}")
  list(APPEND clip_targets ratrain-emit-clip-${name})
endforeach()
add_test(NAME e2e.clip.compile
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
          --target ${clip_targets} ratrain-emit-tiny-llama-3.2 ratrain-corpus)
set_tests_properties(e2e.clip.compile PROPERTIES TIMEOUT 900
  LABELS "e2e" FIXTURES_SETUP ratrain-clip-programs
  RESOURCE_LOCK ratrain-build-tree)
add_test(NAME e2e.clip.train
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/clip-test.sh ${MPIEXEC_EXECUTABLE}
          ${RATRAIN_CORPUS_TOKENS} 12
          $<TARGET_FILE:ratrain-emit-clip-pp2>
          $<TARGET_FILE:ratrain-emit-clip-zero1>
          $<TARGET_FILE:ratrain-emit-clip-off>
          $<TARGET_FILE:ratrain-emit-tiny-llama-3.2>)
set_tests_properties(e2e.clip.train PROPERTIES TIMEOUT 600
  LABELS "e2e;mpi" PROCESSORS 2 FIXTURES_REQUIRED ratrain-clip-programs)
