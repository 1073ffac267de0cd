# Heterogeneous clusters (docs/planner.md, "Heterogeneous clusters"): the
# tiny LLaMA on four ranks of examples/machines/host-mixed.yaml split into
# two virtual clusters per cluster (two of class `fast`, two of class `slow`
# at half the compute), run with --emulate-classes so that the slow ranks
# really are twice as slow. Every case trains RATRAIN_E2E_LONG_STEPS steps on
# the same global batch of 8 sequences as the homogeneous pp 2 x dp 2 plan
# (2 micro-batches of 2 per replica), and every step's loss must be within
# 1e-6 (relative) of that run's: uneven shares sum the same micro-batches in another order,
# and an uneven layer split computes the same layers elsewhere.
if(NOT COMMAND ratrain_add_emitted_program OR NOT TARGET ratrain-corpus OR
   NOT TARGET ratrain)
  return()
endif()

set(RATRAIN_HETERO_STEPS ${RATRAIN_E2E_LONG_STEPS})
set(hetero_dir ${CMAKE_CURRENT_BINARY_DIR}/heterogeneous)
file(MAKE_DIRECTORY ${hetero_dir})
set(hetero_model ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json)
set(hetero_mixed ${hetero_dir}/host-mixed-x2.yaml)
set(hetero_even ${hetero_dir}/host-x2.yaml)
add_custom_command(OUTPUT ${hetero_mixed}
  COMMAND ratrain machine ${PROJECT_SOURCE_DIR}/examples/machines/host-mixed.yaml
          --ranks-per-cluster 2 -o ${hetero_mixed}
  DEPENDS ratrain ${PROJECT_SOURCE_DIR}/examples/machines/host-mixed.yaml
  COMMENT "Splitting host-mixed.yaml into 4 virtual clusters")
add_custom_command(OUTPUT ${hetero_even}
  COMMAND ratrain machine ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml
          --ranks-per-cluster 2 -o ${hetero_even}
  DEPENDS ratrain ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml
  COMMENT "Splitting host.yaml into 4 virtual clusters")

# The homogeneous reference: pp 2 x dp 2, ZeRO-1, 2 micro-batches of 2.
ratrain_add_emitted_program(ratrain-hetero-reference
  MODEL ${hetero_model} MACHINE ${hetero_even}
  PLAN "clusters=4 global-batch=8 pp=2 zero=1 micro-batch-size=2")

# name | plan on the mixed machine
# forced: replica 0 (the fast ranks, replica-major) runs 3 micro-batches,
# replica 1 (the slow ones) 1; replicas: the shares the planner picks;
# stages: the planner's uneven layer split, stage 0 on the fast ranks;
# dp4: pp 1 x dp 4 with shares 3,3,1,1 of single sequences.
set(hetero_cases
  "forced|clusters=4 global-batch=8 pp=2 zero=1 dp-shares=3,1"
  "replicas|clusters=4 global-batch=8 pp=2 zero=1 micro-batch-size=2 class-layout=replicas"
  "stages|clusters=4 global-batch=8 pp=2 zero=1 micro-batch-size=2 class-layout=stages"
  "dp4|clusters=4 global-batch=8 pp=1 zero=1 dp-shares=3,3,1,1")
foreach(case ${hetero_cases})
  string(REPLACE "|" ";" fields "${case}")
  list(GET fields 0 name)
  list(GET fields 1 plan)
  set(target ratrain-hetero-${name})
  ratrain_add_emitted_program(${target}
    MODEL ${hetero_model} MACHINE ${hetero_mixed} PLAN "${plan}")
  add_test(NAME e2e.hetero.${name}.compile
    COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
            --target ${target} ratrain-hetero-reference ratrain-corpus)
  set_tests_properties(e2e.hetero.${name}.compile PROPERTIES
    TIMEOUT 600 LABELS "e2e" FIXTURES_SETUP ratrain-hetero-${name}
    RESOURCE_LOCK ratrain-build-tree)
  add_test(NAME e2e.hetero.${name}.near-losses
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/close-losses-test.sh --every-step
            ${MPIEXEC_EXECUTABLE} 4 $<TARGET_FILE:${target}>
            $<TARGET_FILE:ratrain-hetero-reference> ${RATRAIN_CORPUS_TOKENS}
            ${RATRAIN_HETERO_STEPS} 1e-6 "the ${name} layout"
            --emulate-classes)
  set_tests_properties(e2e.hetero.${name}.near-losses PROPERTIES
    TIMEOUT 1200 LABELS "e2e;mpi" PROCESSORS 4
    FIXTURES_REQUIRED ratrain-hetero-${name})
endforeach()

# Uneven shares checkpoint and resume bit-identically (the data position
# advances by the step's sum of shares).
add_test(NAME e2e.hetero.forced.resume
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/emit-resume-test.sh
          ${MPIEXEC_EXECUTABLE} 4 $<TARGET_FILE:ratrain-hetero-forced>
          ${RATRAIN_CORPUS_TOKENS})
set_tests_properties(e2e.hetero.forced.resume PROPERTIES
  TIMEOUT 600 LABELS "e2e;mpi" PROCESSORS 4
  FIXTURES_REQUIRED ratrain-hetero-forced)
