# ZeRO-3 in real training runs (docs/schedule.md, "ZeRO-3"): the tiny LLaMA
# with its parameter views sharded over the data-parallel group, gathered
# before every forward, recompute and backward, trains RATRAIN_EQUIV_STEPS
# steps with the losses of the same layout without ZeRO within
# RATRAIN_ZERO3_TOLERANCE (relative) at every step:
#
#   dp4-zero3        4 ranks, pp 1 x dp 4        vs dp4-zero0
#   pp2xdp2-zero3    4 ranks, pp 2 x dp 2        vs pp2xdp2 (equivalence.cmake)
#   dp4-zero3-2nodes 4 ranks as 2 emulated nodes (RATRAIN_RANKS_PER_NODE=2,
#                    partition=flat: hierarchical gathers and
#                    reduce-scatters over all 4) vs dp4-zero0
#   pp2xdp2-bf16-zero3  the same in bf16 (16-bit view shards, FP32 master
#                    shards)                     vs pp2xdp2-bf16-zero0
#   dp8-zero3        8 ranks, pp 1 x dp 8, global batch 8 (host.yaml split
#                    into 8 virtual clusters)    vs dp8-zero0
#
# Included from test/e2e/CMakeLists.txt after equivalence.cmake, whose runs,
# machine files and ratrain_add_equivalence it reuses.
if(NOT COMMAND ratrain_add_emitted_program OR NOT TARGET ratrain-corpus OR
   NOT TARGET ratrain-equiv-pp2xdp2-ratrain)
  return()
endif()

set(RATRAIN_ZERO3_TOLERANCE 1e-6 CACHE STRING
    "largest relative loss deviation of a ZeRO-3 run from its ZeRO-0 layout")
set(zero3_model ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json)
# 8 ranks: host.yaml's clusters split into 8 virtual clusters.
set(zero3_host8 ${equiv_dir}/host-x4.yaml)
add_custom_command(OUTPUT ${zero3_host8}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${equiv_dir}
  COMMAND ratrain machine ${equiv_host} --ranks-per-cluster 4 -o ${zero3_host8}
  DEPENDS ratrain ${equiv_host}
  COMMENT "Splitting host.yaml into 8 virtual clusters")
set(zero3_layouts
  "dp4-zero0|${equiv_host4}|clusters=4 pp=1 zero=0||"
  "dp4-zero3|${equiv_host4}|clusters=4 pp=1 zero=3||"
  "pp2xdp2-zero3|${equiv_host4}|clusters=4 pp=2 zero=3||"
  "dp4-zero3-2nodes|${CMAKE_CURRENT_SOURCE_DIR}/Inputs/host-2nodes.yaml|clusters=4 pp=1 zero=3 partition=flat|RATRAIN_RANKS_PER_NODE=2|"
  "pp2xdp2-bf16-zero0|${equiv_host4}|clusters=4 pp=2 zero=0||bf16"
  "pp2xdp2-bf16-zero3|${equiv_host4}|clusters=4 pp=2 zero=3||bf16"
  "dp8-zero0|${zero3_host8}|clusters=8 pp=1 zero=0||"
  "dp8-zero3|${zero3_host8}|clusters=8 pp=1 zero=3||")
set(zero3_targets)
foreach(layout ${zero3_layouts})
  string(REPLACE "|" ";" fields "${layout}")
  list(GET fields 0 name)
  list(GET fields 1 machine)
  list(GET fields 2 plan)
  list(GET fields 3 env)
  list(GET fields 4 dtype)
  set(ranks 4)
  set(batch ${RATRAIN_EQUIV_BATCH})
  if(name MATCHES "^dp8")
    set(ranks 8)
    set(batch 8)
  endif()
  set(run ${name}.ratrain)
  set(target ratrain-zero3-${name})
  ratrain_add_emitted_program(${target}
    MODEL ${zero3_model} MACHINE ${machine} DTYPE "${dtype}"
    PLAN "${plan} global-batch=${batch}")
  list(APPEND zero3_targets ${target})
  add_test(NAME e2e.equiv.run.${run}
    COMMAND ${CMAKE_COMMAND} -E env ${env}
            ${CMAKE_CURRENT_SOURCE_DIR}/equivalence-run.sh
            ${MPIEXEC_EXECUTABLE} ${ranks} $<TARGET_FILE:${target}>
            ${RATRAIN_CORPUS_TOKENS} ${RATRAIN_EQUIV_STEPS}
            ${RATRAIN_EQUIV_SEED} ${equiv_dir}/${run}.jsonl)
  set_tests_properties(e2e.equiv.run.${run} PROPERTIES TIMEOUT 300
    LABELS "e2e;mpi" PROCESSORS ${ranks}
    FIXTURES_REQUIRED "ratrain-zero3-programs;ratrain-equiv-programs"
    FIXTURES_SETUP ratrain-equiv-${run})
endforeach()
add_test(NAME e2e.zero3.compile
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
          --target ${zero3_targets} ratrain-corpus)
set_tests_properties(e2e.zero3.compile PROPERTIES TIMEOUT 900
  LABELS "e2e" FIXTURES_SETUP ratrain-zero3-programs
  RESOURCE_LOCK ratrain-build-tree)
# The ZeRO-3 programs gather the views: a hierarchical all-gather per
# compute in the 2-node program.
add_test(NAME e2e.zero3.emitted
  COMMAND ${CMAKE_COMMAND}
          -DFILE=${CMAKE_CURRENT_BINARY_DIR}/ratrain-zero3-dp4-zero3-2nodes.cpp
          -P ${CMAKE_CURRENT_SOURCE_DIR}/hierarchical-check.cmake)
set_tests_properties(e2e.zero3.emitted PROPERTIES TIMEOUT 60
  LABELS "e2e" FIXTURES_REQUIRED ratrain-zero3-programs)

function(ratrain_add_zero3_equivalence a b)
  add_test(NAME e2e.equiv.${a}~${b}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/equivalence-compare.sh
            ${equiv_dir}/${a}.jsonl ${equiv_dir}/${b}.jsonl
            ${RATRAIN_ZERO3_TOLERANCE} ${RATRAIN_EQUIV_STEPS})
  set_tests_properties(e2e.equiv.${a}~${b} PROPERTIES TIMEOUT 60
    LABELS "e2e;mpi"
    FIXTURES_REQUIRED "ratrain-equiv-${a};ratrain-equiv-${b}")
endfunction()
ratrain_add_zero3_equivalence(dp4-zero3.ratrain dp4-zero0.ratrain)
ratrain_add_zero3_equivalence(pp2xdp2-zero3.ratrain pp2xdp2.ratrain)
ratrain_add_zero3_equivalence(dp4-zero3-2nodes.ratrain dp4-zero0.ratrain)
ratrain_add_zero3_equivalence(pp2xdp2-bf16-zero3.ratrain
                              pp2xdp2-bf16-zero0.ratrain)
ratrain_add_zero3_equivalence(dp8-zero3.ratrain dp8-zero0.ratrain)
