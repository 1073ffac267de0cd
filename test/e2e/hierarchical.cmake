# Hierarchical collectives in a real training run: the tiny LLaMA on 4 ranks
# as 2 emulated nodes of 2 (RATRAIN_RANKS_PER_NODE=2, Inputs/host-2nodes.yaml),
# data-parallel with ZeRO-2, so every gradient reduce-scatter and parameter
# all-gather runs the runtime's hierarchical decomposition (node-local, then
# across the nodes). Its losses must match the one-rank reference of the
# policy-equivalence tests within RATRAIN_EQUIV_TOLERANCE at every step.
# Included from test/e2e/CMakeLists.txt after equivalence.cmake.
if(NOT COMMAND ratrain_add_emitted_program OR NOT TARGET ratrain-corpus OR
   NOT TARGET ratrain-equiv-single-ratrain)
  return()
endif()

set(hier_run dp4-zero2-2nodes.ratrain)
set(hier_target ratrain-hier-dp4-zero2)
ratrain_add_emitted_program(${hier_target}
  MODEL ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json
  MACHINE ${CMAKE_CURRENT_SOURCE_DIR}/Inputs/host-2nodes.yaml
  PLAN "clusters=4 pp=1 zero=2 partition=flat global-batch=${RATRAIN_EQUIV_BATCH}")
add_test(NAME e2e.hierarchical.compile
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target ${hier_target})
set_tests_properties(e2e.hierarchical.compile PROPERTIES TIMEOUT 900
  LABELS "e2e" FIXTURES_SETUP ratrain-hier-program
  RESOURCE_LOCK ratrain-build-tree)
# The program must contain hierarchical reduce-scatters and all-gathers.
add_test(NAME e2e.hierarchical.emitted
  COMMAND ${CMAKE_COMMAND}
          -DFILE=${CMAKE_CURRENT_BINARY_DIR}/${hier_target}.cpp
          -P ${CMAKE_CURRENT_SOURCE_DIR}/hierarchical-check.cmake)
set_tests_properties(e2e.hierarchical.emitted PROPERTIES TIMEOUT 60
  LABELS "e2e" FIXTURES_REQUIRED ratrain-hier-program)
add_test(NAME e2e.equiv.run.${hier_run}
  COMMAND ${CMAKE_COMMAND} -E env RATRAIN_RANKS_PER_NODE=2
          ${CMAKE_CURRENT_SOURCE_DIR}/equivalence-run.sh
          ${MPIEXEC_EXECUTABLE} 4 $<TARGET_FILE:${hier_target}>
          ${RATRAIN_CORPUS_TOKENS} ${RATRAIN_EQUIV_STEPS}
          ${RATRAIN_EQUIV_SEED} ${equiv_dir}/${hier_run}.jsonl)
set_tests_properties(e2e.equiv.run.${hier_run} PROPERTIES TIMEOUT 300
  LABELS "e2e;mpi" PROCESSORS 4
  FIXTURES_REQUIRED "ratrain-hier-program;ratrain-equiv-programs"
  FIXTURES_SETUP ratrain-equiv-${hier_run})
ratrain_add_equivalence(${hier_run} single.ratrain)
