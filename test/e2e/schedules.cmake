# Pipeline schedules as data (docs/pipeline-schedules.md): a tiny LLaMA with 8
# decoder layers (10 model layers) trains under every schedule the compiler
# generates, on pp 2 and pp 4, and each schedule's losses must equal the 1F1B
# run of the same plan within 1e-6 relative over RATRAIN_SCHEDULE_STEPS
# steps. Included from test/e2e/CMakeLists.txt.
if(NOT COMMAND ratrain_add_emitted_program OR NOT TARGET ratrain-corpus)
  return()
endif()

set(RATRAIN_SCHEDULE_STEPS ${RATRAIN_E2E_LONG_STEPS})
set(schedule_model ${CMAKE_CURRENT_SOURCE_DIR}/tiny-llama-8-decoders.json)
set(schedule_host ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml)
set(schedule_kinds 1f1b zb-h1 interleaved-1f1b zbv)

# pp 4 needs host.yaml split into 4 virtual clusters.
set(schedule_layouts "pp2|2|${schedule_host}|clusters=2 pp=2 global-batch=4")
if(TARGET ratrain)
  set(schedule_host4 ${CMAKE_CURRENT_BINARY_DIR}/schedules/host-x2.yaml)
  add_custom_command(OUTPUT ${schedule_host4}
    COMMAND ${CMAKE_COMMAND} -E make_directory
            ${CMAKE_CURRENT_BINARY_DIR}/schedules
    COMMAND ratrain machine ${schedule_host} --ranks-per-cluster 2
            -o ${schedule_host4}
    DEPENDS ratrain ${schedule_host}
    COMMENT "Splitting host.yaml into 4 virtual clusters (schedules)")
  list(APPEND schedule_layouts
    "pp4|4|${schedule_host4}|clusters=4 pp=4 global-batch=8")
endif()

foreach(layout ${schedule_layouts})
  string(REPLACE "|" ";" fields "${layout}")
  list(GET fields 0 name)
  list(GET fields 1 ranks)
  list(GET fields 2 machine)
  list(GET fields 3 plan)
  set(targets)
  set(programs)
  foreach(kind ${schedule_kinds})
    set(target ratrain-schedule-${name}-${kind})
    ratrain_add_emitted_program(${target}
      MODEL ${schedule_model} MACHINE ${machine}
      PLAN "${plan} zero=0 micro-batch-size=1" SCHEDULE ${kind} DEPENDS ${machine})
    list(APPEND targets ${target})
    list(APPEND programs $<TARGET_FILE:${target}>)
  endforeach()
  add_test(NAME e2e.schedules.${name}.compile
    COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
            --target ${targets} ratrain-corpus)
  set_tests_properties(e2e.schedules.${name}.compile PROPERTIES TIMEOUT 900
    LABELS "e2e" FIXTURES_SETUP ratrain-schedules-${name}
    RESOURCE_LOCK ratrain-build-tree)
  add_test(NAME e2e.schedules.${name}.losses
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/schedule-losses-test.sh
            ${MPIEXEC_EXECUTABLE} ${ranks} ${RATRAIN_CORPUS_TOKENS}
            ${RATRAIN_SCHEDULE_STEPS} ${programs})
  set_tests_properties(e2e.schedules.${name}.losses PROPERTIES TIMEOUT 1200
    LABELS "e2e;mpi" PROCESSORS ${ranks}
    FIXTURES_REQUIRED ratrain-schedules-${name})
endforeach()
