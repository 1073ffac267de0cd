# Baseline losses (docs/developing.md, "Baseline losses"): the emitted
# programs of tiny LLaMA and Baichuan plans covering the lowering's paths
# train RATRAIN_BASELINE_STEPS steps with a fixed seed on the corpus, and
# every step's loss must equal, bit for bit, the loss recorded in
# test/e2e/Inputs/baseline-losses/<name>.txt (first recorded before the
# issue 11 refactor, commit 1cb57e9; re-recorded at a8ace28, when weight
# decay stopped applying to the norm weights). A change that is meant to
# change the numerics re-records them (RATRAIN_BASELINE_RECORD=1). The programs are the ones
# emit-cpp.cmake, equivalence.cmake, offload.cmake and baichuan.cmake
# define; included from test/e2e/CMakeLists.txt after them.
if(NOT COMMAND ratrain_add_emitted_program OR NOT TARGET ratrain-corpus)
  return()
endif()

set(RATRAIN_BASELINE_STEPS 20)
set(RATRAIN_BASELINE_SEED 7)
set(baseline_dir ${CMAKE_CURRENT_SOURCE_DIR}/Inputs/baseline-losses)

# name | ranks | program | plan (for the record's header)
set(baseline_cases
  "single|1|ratrain-equiv-single-ratrain|f32, clusters=1 global-batch=4"
  "pp2|2|ratrain-emit-tiny-pp2|f32, clusters=2 global-batch=4 pp=2"
  "bf16-pp2|2|ratrain-emit-tiny-bf16|bf16, clusters=2 global-batch=4 pp=2"
  "dp2-zero1|2|ratrain-emit-tiny|f32, clusters=2 global-batch=8 (pp 1 x dp 2, ZeRO-1)"
  "pp2xdp2|4|ratrain-equiv-pp2xdp2-ratrain|f32, host-x2.yaml, clusters=4 pp=2 zero=0 global-batch=4"
  "gpu-style-pp2|2|ratrain-equiv-pp2-gpu-style|f32, clusters=2 pp=2 global-batch=4 policy=gpu-style"
  "gpu-style-dp2-zero1|2|ratrain-equiv-dp2-zero1-gpu-style|f32, clusters=2 pp=1 zero=1 global-batch=4 policy=gpu-style"
  "offload-optimizer-pp2|2|ratrain-offload-optimizer|f32, clusters=2 global-batch=4 pp=2 offload=optimizer"
  "offload-master-bf16-pp2|2|ratrain-offload-master-bf16|bf16, clusters=2 global-batch=4 pp=2 offload=master"
  "offload-chunked-zero1-optimizer|2|ratrain-offload-chunked-zero1-optimizer|f32, host-chunked.yaml, clusters=2 global-batch=8 offload=optimizer"
  "offload-chunked-zero1-master-bf16|2|ratrain-offload-chunked-zero1-master-bf16|bf16, host-chunked.yaml, clusters=2 global-batch=8 offload=master"
  "baichuan-dp2-zero1|2|ratrain-emit-tiny-baichuan|tiny-baichuan.json f32, clusters=2 global-batch=8")

set(baseline_targets)
set(baseline_tests)
foreach(case ${baseline_cases})
  string(REPLACE "|" ";" fields "${case}")
  list(GET fields 0 name)
  list(GET fields 1 ranks)
  list(GET fields 2 target)
  list(GET fields 3 plan)
  # A renamed or dropped program must not drop its baseline silently.
  if(NOT TARGET ${target})
    add_test(NAME e2e.baseline-losses.${name}
      COMMAND sh -c "echo \"FAIL: $1: no target $2 builds its program\"; exit 1"
              baseline-losses ${name} ${target})
    set_tests_properties(e2e.baseline-losses.${name} PROPERTIES
      LABELS "e2e;mpi")
    continue()
  endif()
  list(APPEND baseline_targets ${target})
  # The bf16 GEMM has another instruction sequence without AVX512-BF16.
  set(cpu_flag)
  if(plan MATCHES "^bf16")
    set(cpu_flag --needs-cpu-flag avx512_bf16)
  endif()
  add_test(NAME e2e.baseline-losses.${name}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/baseline-losses-test.sh ${cpu_flag}
            ${MPIEXEC_EXECUTABLE} ${ranks} $<TARGET_FILE:${target}>
            ${RATRAIN_CORPUS_TOKENS} ${RATRAIN_BASELINE_STEPS}
            ${RATRAIN_BASELINE_SEED} ${baseline_dir}/${name}.txt "${plan}")
  set_tests_properties(e2e.baseline-losses.${name} PROPERTIES TIMEOUT 600
    LABELS "e2e;mpi" PROCESSORS ${ranks} SKIP_RETURN_CODE 77
    FIXTURES_REQUIRED ratrain-baseline-losses)
endforeach()

if(baseline_targets)
  add_test(NAME e2e.baseline-losses.compile
    COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
            --target ${baseline_targets} ratrain-corpus)
  set_tests_properties(e2e.baseline-losses.compile PROPERTIES TIMEOUT 900
    LABELS "e2e" FIXTURES_SETUP ratrain-baseline-losses
    RESOURCE_LOCK ratrain-build-tree)
endif()
