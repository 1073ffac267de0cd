# Waits derived from memory effects (docs/mt3k-passes.md): the mt3k programs
# of several tiny LLaMA plans with every mt3k.wait removed and the waits put
# back by --mt3k-insert-waits alone train bit-identically to the lowering's
# programs (the references, from emit-cpp.cmake and offload.cmake). Included
# from test/e2e/CMakeLists.txt after offload.cmake.
if(NOT COMMAND ratrain_add_emitted_program OR NOT TARGET ratrain-corpus OR
   NOT TARGET ratrain-emit-tiny OR NOT TARGET ratrain-emit-tiny-bf16 OR
   NOT TARGET ratrain-offload-master-bf16 OR
   NOT TARGET ratrain-offload-chunked-zero1-optimizer)
  return()
endif()

set(RATRAIN_MT3K_WAITS_STEPS 10)
set(waits_model ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json)
set(waits_host ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml)
set(waits_chunked ${CMAKE_CURRENT_BINARY_DIR}/offload/host-chunked.yaml)

# name | --dtype | plan | reference program | machine
# pp 1 x dp 2 under ZeRO-1 (gradient reduce-scatter, view all-gather); pp 2
# in bf16 (GSM staging DMAs, pipeline send/recv); pp 2 in bf16 with the
# masters offloaded (prologue offloads, reloads); pp 1 x dp 2 under ZeRO-1
# with Adam state streamed in chunks (reload of chunk k+1 over AdamW on k).
set(waits_cases
  "zero1||clusters=2 global-batch=8|ratrain-emit-tiny|${waits_host}"
  "pp2-bf16|bf16|clusters=2 global-batch=4 pp=2|ratrain-emit-tiny-bf16|${waits_host}"
  "offload-master-bf16|bf16|clusters=2 global-batch=4 pp=2 offload=master|ratrain-offload-master-bf16|${waits_host}"
  "chunked-zero1-optimizer||clusters=2 global-batch=8 offload=optimizer|ratrain-offload-chunked-zero1-optimizer|${waits_chunked}")
foreach(case ${waits_cases})
  string(REPLACE "|" ";" fields "${case}")
  list(GET fields 0 name)
  list(GET fields 1 dtype)
  list(GET fields 2 plan)
  list(GET fields 3 reference)
  list(GET fields 4 machine)
  set(target ratrain-mt3k-waits-${name})
  set(lowered ${CMAKE_CURRENT_BINARY_DIR}/${target}.lowered.mlir)
  set(rewaited ${CMAKE_CURRENT_BINARY_DIR}/${target}.mlir)
  set(dtype_args)
  if(dtype)
    set(dtype_args --dtype ${dtype})
  endif()
  add_custom_command(OUTPUT ${rewaited}
    COMMAND ${RATRAIN_EMIT_DIR}/emit-lower.sh
            $<TARGET_FILE:ratrain-translate> $<TARGET_FILE:ratrain-opt>
            ${waits_model} ${machine} "${plan}" ${lowered} ${dtype_args}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mt3k-rewait.sh
            $<TARGET_FILE:ratrain-opt> ${lowered} ${rewaited}
    DEPENDS ratrain-translate ratrain-opt ${waits_model} ${machine}
            ${RATRAIN_EMIT_DIR}/emit-lower.sh
            ${CMAKE_CURRENT_SOURCE_DIR}/mt3k-rewait.sh
    COMMENT "Lowering ${name} and re-placing its waits")
  ratrain_add_emitted_program(${target} MLIR ${rewaited})
  add_test(NAME e2e.mt3k-waits.${name}.compile
    COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
            --target ${target} ${reference} ratrain-corpus)
  set_tests_properties(e2e.mt3k-waits.${name}.compile PROPERTIES TIMEOUT 600
    LABELS "e2e" FIXTURES_SETUP ratrain-mt3k-waits-${name}
    RESOURCE_LOCK ratrain-build-tree)
  add_test(NAME e2e.mt3k-waits.${name}.equal-losses
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/equal-losses-test.sh
            ${MPIEXEC_EXECUTABLE} 2 $<TARGET_FILE:${target}>
            $<TARGET_FILE:${reference}> ${RATRAIN_CORPUS_TOKENS}
            ${RATRAIN_MT3K_WAITS_STEPS} "waits placed by --mt3k-insert-waits")
  set_tests_properties(e2e.mt3k-waits.${name}.equal-losses PROPERTIES
    TIMEOUT 600 LABELS "e2e;mpi" PROCESSORS 2
    FIXTURES_REQUIRED ratrain-mt3k-waits-${name})
endforeach()
