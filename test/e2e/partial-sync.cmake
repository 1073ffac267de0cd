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

# 100 steps end 3.4% apart (the acceptance run, 300 steps, in
# docs/schedule.md); -DRATRAIN_PARTIAL_SYNC_STEPS=300 repeats it.
set(RATRAIN_PARTIAL_SYNC_STEPS 100 CACHE STRING
    "steps of the partial-synchronization convergence test (acceptance: 300)")
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

# Partial synchronization with the optimizer states offloaded (the masters,
# which are averaged, stay in DDR): the 4-layer tiny LLaMA in bf16 on dp 2
# with sync-period=2 (the views cast from the averaged masters) trains bit for
# bit as without offload over 20 steps.
set(partial_offload_plan "clusters=2 global-batch=8 zero=0 sync-period=2")
set(partial_offload_host ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml)
ratrain_add_emitted_program(ratrain-partial-sync-bf16
  MODEL ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json
  MACHINE ${partial_offload_host} PLAN "${partial_offload_plan}" DTYPE bf16)
ratrain_add_emitted_program(ratrain-partial-sync-bf16-offload
  MODEL ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json
  MACHINE ${partial_offload_host}
  PLAN "${partial_offload_plan} offload=optimizer" DTYPE bf16)
add_test(NAME e2e.partial-sync.offload.compile
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
          --target ratrain-partial-sync-bf16 ratrain-partial-sync-bf16-offload
          ratrain-corpus)
set_tests_properties(e2e.partial-sync.offload.compile PROPERTIES
  TIMEOUT 900 LABELS "e2e" FIXTURES_SETUP ratrain-partial-sync-offload
  RESOURCE_LOCK ratrain-build-tree)
add_test(NAME e2e.partial-sync.offload.equal-losses
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/equal-losses-test.sh
          ${MPIEXEC_EXECUTABLE} 2
          $<TARGET_FILE:ratrain-partial-sync-bf16-offload>
          $<TARGET_FILE:ratrain-partial-sync-bf16> ${RATRAIN_CORPUS_TOKENS} 20
          "the optimizer states offloaded under partial synchronization")
set_tests_properties(e2e.partial-sync.offload.equal-losses PROPERTIES
  TIMEOUT 600 LABELS "e2e;mpi" PROCESSORS 2
  FIXTURES_REQUIRED ratrain-partial-sync-offload)
