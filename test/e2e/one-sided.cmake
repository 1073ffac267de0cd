# One-sided pipeline transfers (docs/schedule.md, "One-sided transfers"): the
# 8-decoder tiny LLaMA of schedules.cmake, compiled with transfers=one-sided
# (every message a put into the receiver's reserved buffer, MPI RMA), trains
# RATRAIN_SCHEDULE_STEPS steps with losses bit for bit equal to the same
# plan's two-sided program (schedules.cmake's), under 1F1B and zero-bubble V,
# on pp 2 and pp 4. Included from test/e2e/CMakeLists.txt after
# schedules.cmake.
if(NOT COMMAND ratrain_add_emitted_program OR NOT TARGET ratrain-corpus OR
   NOT TARGET ratrain-schedule-pp2-1f1b)
  return()
endif()

set(one_sided_layouts "pp2|2|${schedule_host}|clusters=2 pp=2 global-batch=4")
if(TARGET ratrain-schedule-pp4-1f1b)
  list(APPEND one_sided_layouts
    "pp4|4|${schedule_host4}|clusters=4 pp=4 global-batch=8")
endif()

foreach(layout ${one_sided_layouts})
  string(REPLACE "|" ";" fields "${layout}")
  list(GET fields 0 name)
  list(GET fields 1 ranks)
  list(GET fields 2 machine)
  list(GET fields 3 plan)
  foreach(kind 1f1b zbv)
    set(target ratrain-one-sided-${name}-${kind})
    set(reference ratrain-schedule-${name}-${kind})
    ratrain_add_emitted_program(${target}
      MODEL ${schedule_model} MACHINE ${machine}
      PLAN "${plan} zero=0 micro-batch-size=1 transfers=one-sided"
      SCHEDULE ${kind} DEPENDS ${machine})
    add_test(NAME e2e.one-sided.${name}.${kind}.compile
      COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
              --target ${target} ${reference} ratrain-corpus)
    set_tests_properties(e2e.one-sided.${name}.${kind}.compile PROPERTIES
      TIMEOUT 900 LABELS "e2e"
      FIXTURES_SETUP ratrain-one-sided-${name}-${kind}
      RESOURCE_LOCK ratrain-build-tree)
    add_test(NAME e2e.one-sided.${name}.${kind}.equal-losses
      COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/equal-losses-test.sh
              ${MPIEXEC_EXECUTABLE} ${ranks} $<TARGET_FILE:${target}>
              $<TARGET_FILE:${reference}> ${RATRAIN_CORPUS_TOKENS}
              ${RATRAIN_SCHEDULE_STEPS} "one-sided transfers")
    set_tests_properties(e2e.one-sided.${name}.${kind}.equal-losses PROPERTIES
      TIMEOUT 900 LABELS "e2e;mpi" PROCESSORS ${ranks}
      FIXTURES_REQUIRED ratrain-one-sided-${name}-${kind})
  endforeach()
endforeach()
