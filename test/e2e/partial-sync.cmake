# Layer-wise partial synchronization (DreamDDP; docs/schedule.md, "Partial
# synchronization"): the 8-decoder tiny LLaMA of schedules.cmake on dp 4
# (host.yaml split into 4 virtual clusters), compiled with sync-period=4
# (each replica updates with its own gradient; each layer's masters are
# averaged every 4 steps, a quarter of the layers per step), trains
# RATRAIN_PARTIAL_SYNC_STEPS steps to a loss within 5% of the same plan's
# synchronous program (an all-reduce of every gradient every step). Both
# losses are printed. The partial run's learning rate is sqrt(dp) = 2 times
# the compiled 3e-4: each replica's Adam normalizes its own, noisier
# gradient, so the averaged step is smaller; at the same rate it ends 23%
# higher (docs/schedule.md, "Partial synchronization", has the
# measurements). Included from test/e2e/CMakeLists.txt after
# schedules.cmake.
if(NOT COMMAND ratrain_add_emitted_program OR NOT TARGET ratrain-corpus OR
   NOT DEFINED schedule_host4)
  return()
endif()

set(RATRAIN_PARTIAL_SYNC_STEPS 300)
set(partial_plan "clusters=4 pp=1 global-batch=8 zero=0 micro-batch-size=1")
ratrain_add_emitted_program(ratrain-partial-sync-dp4
  MODEL ${schedule_model} MACHINE ${schedule_host4}
  PLAN "${partial_plan} sync-period=4" DEPENDS ${schedule_host4})
ratrain_add_emitted_program(ratrain-partial-sync-dp4-reference
  MODEL ${schedule_model} MACHINE ${schedule_host4}
  PLAN "${partial_plan}" DEPENDS ${schedule_host4})
add_test(NAME e2e.partial-sync.dp4.compile
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
          --target ratrain-partial-sync-dp4 ratrain-partial-sync-dp4-reference
          ratrain-corpus)
set_tests_properties(e2e.partial-sync.dp4.compile PROPERTIES
  TIMEOUT 900 LABELS "e2e" FIXTURES_SETUP ratrain-partial-sync
  RESOURCE_LOCK ratrain-build-tree)
add_test(NAME e2e.partial-sync.dp4.close-losses
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/close-losses-test.sh
          ${MPIEXEC_EXECUTABLE} 4 $<TARGET_FILE:ratrain-partial-sync-dp4>
          $<TARGET_FILE:ratrain-partial-sync-dp4-reference>
          ${RATRAIN_CORPUS_TOKENS} ${RATRAIN_PARTIAL_SYNC_STEPS} 0.05
          "partial synchronization every 4 steps" "--lr 6e-4")
set_tests_properties(e2e.partial-sync.dp4.close-losses PROPERTIES
  TIMEOUT 1200 LABELS "e2e;mpi" PROCESSORS 4
  FIXTURES_REQUIRED ratrain-partial-sync)
