# Policy equivalence (docs/schedule.md, "Equivalence of the policies"): the
# tiny LLaMA with the same global batch, data and seed, compiled for one rank
# and for several pipeline / data-parallel layouts under both lifecycle
# policies, trains RATRAIN_EQUIV_STEPS steps; the losses of every pair that
# must compute the same thing may differ by at most RATRAIN_EQUIV_TOLERANCE
# (relative) at every step. Included from test/e2e/CMakeLists.txt after
# emit-cpp.cmake (ratrain_add_emitted_program).
if(NOT COMMAND ratrain_add_emitted_program OR NOT TARGET ratrain-corpus)
  return()
endif()

set(RATRAIN_EQUIV_STEPS ${RATRAIN_E2E_LONG_STEPS})
set(RATRAIN_EQUIV_TOLERANCE 1e-3 CACHE STRING
    "largest relative loss deviation the policy-equivalence tests accept")
option(RATRAIN_EQUIV_ALL_LAYOUTS
  "policy equivalence also on pp1 x dp2 without ZeRO (about 70 s more)" OFF)
set(RATRAIN_EQUIV_SEED 7)
set(RATRAIN_EQUIV_BATCH 4)
set(equiv_dir ${CMAKE_CURRENT_BINARY_DIR}/equivalence)
set(equiv_model ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json)
set(equiv_host ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml)

# Layouts: name, ranks, machine file, --ratrain-plan options (the global
# batch is appended). "single" is the reference every other layout is
# compared with; it runs under the default policy (ratrain). Plain dp
# all-reduces (ZeRO off) are also covered by pp2xdp2; the pp1 x dp2 layout
# without ZeRO is opt-in to keep the suite under about 5 minutes on 2 cores.
set(equiv_layouts
  "single|1|${equiv_host}|clusters=1"
  "pp2|2|${equiv_host}|clusters=2 pp=2"
  "dp2-zero1|2|${equiv_host}|clusters=2 pp=1 zero=1")
if(RATRAIN_EQUIV_ALL_LAYOUTS)
  list(APPEND equiv_layouts "dp2|2|${equiv_host}|clusters=2 pp=1 zero=0")
endif()
# 4 ranks (PP=2 x DP=2) need host.yaml split into virtual clusters by the
# driver (`ratrain machine --ranks-per-cluster 2`).
set(equiv_machine_depends)
if(TARGET ratrain)
  set(equiv_host4 ${equiv_dir}/host-x2.yaml)
  add_custom_command(OUTPUT ${equiv_host4}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${equiv_dir}
    COMMAND ratrain machine ${equiv_host} --ranks-per-cluster 2
            -o ${equiv_host4}
    DEPENDS ratrain ${equiv_host}
    COMMENT "Splitting host.yaml into 4 virtual clusters")
  list(APPEND equiv_layouts
    "pp2xdp2|4|${equiv_host4}|clusters=4 pp=2 zero=0")
endif()

set(equiv_targets)
set(equiv_runs)
foreach(layout ${equiv_layouts})
  string(REPLACE "|" ";" fields "${layout}")
  list(GET fields 0 name)
  list(GET fields 1 ranks)
  list(GET fields 2 machine)
  list(GET fields 3 plan)
  if(name STREQUAL "single")
    set(policies ratrain)
  else()
    set(policies ratrain gpu-style)
  endif()
  foreach(policy ${policies})
    set(run ${name}.${policy})
    set(target ratrain-equiv-${name}-${policy})
    ratrain_add_emitted_program(${target}
      MODEL ${equiv_model} MACHINE ${machine}
      PLAN "${plan} global-batch=${RATRAIN_EQUIV_BATCH}" POLICY ${policy})
    list(APPEND equiv_targets ${target})
    list(APPEND equiv_runs ${run})
    # One run per program, shared by every comparison that reads its log.
    add_test(NAME e2e.equiv.run.${run}
      COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/equivalence-run.sh
              ${MPIEXEC_EXECUTABLE} ${ranks} $<TARGET_FILE:${target}>
              ${RATRAIN_CORPUS_TOKENS} ${RATRAIN_EQUIV_STEPS}
              ${RATRAIN_EQUIV_SEED} ${equiv_dir}/${run}.jsonl)
    set_tests_properties(e2e.equiv.run.${run} PROPERTIES TIMEOUT 300
      LABELS "e2e;mpi" PROCESSORS ${ranks}
      FIXTURES_REQUIRED ratrain-equiv-programs
      FIXTURES_SETUP ratrain-equiv-${run})
  endforeach()
endforeach()

add_test(NAME e2e.equiv.compile
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
          --target ${equiv_targets} ratrain-corpus)
set_tests_properties(e2e.equiv.compile PROPERTIES TIMEOUT 900
  LABELS "e2e" FIXTURES_SETUP ratrain-equiv-programs
  RESOURCE_LOCK ratrain-build-tree)

# e2e.equiv.<a>~<b>: both logs exist, cover the same steps (at least
# RATRAIN_EQUIV_STEPS) with finite losses, and differ by at most the
# tolerance; prints the largest deviation and its step.
function(ratrain_add_equivalence a b)
  add_test(NAME e2e.equiv.${a}~${b}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/equivalence-compare.sh
            ${equiv_dir}/${a}.jsonl ${equiv_dir}/${b}.jsonl
            ${RATRAIN_EQUIV_TOLERANCE} ${RATRAIN_EQUIV_STEPS})
  set_tests_properties(e2e.equiv.${a}~${b} PROPERTIES TIMEOUT 60
    LABELS "e2e;mpi"
    FIXTURES_REQUIRED "ratrain-equiv-${a};ratrain-equiv-${b}")
endfunction()

foreach(run ${equiv_runs})
  if(run MATCHES "^(.*)\\.ratrain$" AND NOT run STREQUAL "single.ratrain")
    ratrain_add_equivalence(${run} ${CMAKE_MATCH_1}.gpu-style)
  endif()
  if(NOT run STREQUAL "single.ratrain")
    ratrain_add_equivalence(${run} single.ratrain)
  endif()
endforeach()

# Determinism: a rerun with the same seed repeats the first steps of the
# shared run bit for bit, and another seed is told apart by the tolerance.
# On dp2-zero1 under ratrain: the most asynchronous of the 2-rank programs
# (reduce-scatter, update and all-gather overlapping the backward).
# The rerun covers at most 20 steps, and never more than the shared run.
set(equiv_rerun dp2-zero1.ratrain)
set(equiv_rerun_steps 20)
if(RATRAIN_EQUIV_STEPS LESS equiv_rerun_steps)
  set(equiv_rerun_steps ${RATRAIN_EQUIV_STEPS})
endif()
add_test(NAME e2e.equiv.rerun.${equiv_rerun}
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/equivalence-rerun.sh
          ${MPIEXEC_EXECUTABLE} 2
          $<TARGET_FILE:ratrain-equiv-dp2-zero1-ratrain>
          ${RATRAIN_CORPUS_TOKENS} ${equiv_rerun_steps} ${RATRAIN_EQUIV_SEED}
          ${equiv_dir}/${equiv_rerun}.jsonl)
set_tests_properties(e2e.equiv.rerun.${equiv_rerun} PROPERTIES TIMEOUT 120
  LABELS "e2e;mpi" PROCESSORS 2
  FIXTURES_REQUIRED "ratrain-equiv-programs;ratrain-equiv-${equiv_rerun}")

# The checker itself, on made-up logs.
add_test(NAME e2e.equiv.checker
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/equivalence-compare-test.sh)
set_tests_properties(e2e.equiv.checker PROPERTIES TIMEOUT 60 LABELS "e2e")
