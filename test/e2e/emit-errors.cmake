# Checkpoints of ZeRO programs and bad input through emitted programs.
# Included from test/e2e/CMakeLists.txt after emit-cpp.cmake, whose programs
# (ratrain-emit-tiny: pp 1 x dp 2, ZeRO-1) and fixtures these tests use.
if(NOT (TARGET ratrain_kernels AND TARGET ratrain_runtime AND
        TARGET ratrain-translate AND TARGET ratrain-opt AND
        TARGET ratrain-ckpt AND TARGET ratrain-emit-tiny))
  return()
endif()

# ZeRO-1 checkpoints: save at step 2, resume, bit-identical steps 3 and 4.
add_test(NAME e2e.emit.tiny.resume
  COMMAND ${RATRAIN_EMIT_DIR}/emit-resume-test.sh ${MPIEXEC_EXECUTABLE} 2
          $<TARGET_FILE:ratrain-emit-tiny> ${RATRAIN_CORPUS_TOKENS})
set_tests_properties(e2e.emit.tiny.resume PROPERTIES TIMEOUT 600
  LABELS "e2e;mpi" PROCESSORS 2 FIXTURES_REQUIRED ratrain-emit-tiny)

# A job killed while saving step 4 leaves step 2 intact (verified by
# ratrain-ckpt); resuming from it repeats steps 3-6 bit for bit.
foreach(program ratrain-emit-tiny ratrain-emit-tiny-pp2)
  string(REPLACE "ratrain-emit-" "" name ${program})
  add_test(NAME e2e.emit.${name}.kill-in-save
    COMMAND ${RATRAIN_EMIT_DIR}/emit-kill-save-test.sh ${MPIEXEC_EXECUTABLE} 2
            $<TARGET_FILE:${program}> ${RATRAIN_CORPUS_TOKENS}
            $<TARGET_FILE:ratrain-ckpt>)
  set_tests_properties(e2e.emit.${name}.kill-in-save PROPERTIES TIMEOUT 600
    LABELS "e2e;mpi" PROCESSORS 2 FIXTURES_REQUIRED ${program})
endforeach()

# ratrain_add_emit_error_test(<case> <regex>): emit-error-test.sh on the
# ZeRO program; a non-zero exit and a message matching <regex>.
function(ratrain_add_emit_error_test case regex)
  add_test(NAME e2e.emit.tiny.error.${case}
    COMMAND ${RATRAIN_EMIT_DIR}/emit-error-test.sh ${MPIEXEC_EXECUTABLE} 2
            $<TARGET_FILE:ratrain-emit-tiny> ${RATRAIN_CORPUS_TOKENS}
            ${case} ${regex})
  set_tests_properties(e2e.emit.tiny.error.${case} PROPERTIES TIMEOUT 600
    LABELS "e2e;mpi" PROCESSORS 2 FIXTURES_REQUIRED ratrain-emit-tiny)
endfunction()

ratrain_add_emit_error_test(checksum
  "optimizer-00001-of-00001-zero-00002-of-00002\\.safetensors: tensor '[^']+' is corrupt: its data checksum is 0x[0-9a-f]+, the file recorded 0x[0-9a-f]+")
ratrain_add_emit_error_test(truncated
  "model-00001-of-00001\\.safetensors: .*\\(truncated\\)")
ratrain_add_emit_error_test(wrong-shape
  "trainer_state\\.json: the checkpoint was saved from a model with hidden_size = 128, this model has 256")
# The same plan for a 2-layer copy of the tiny LLaMA resumes from the 4-layer
# model's checkpoint: refused, naming the difference.
ratrain_add_emitted_program(ratrain-emit-tiny-2-layers
  MODEL ${CMAKE_CURRENT_SOURCE_DIR}/tiny-llama-2-layers.json
  MACHINE ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml
  PLAN "clusters=2 global-batch=8")
add_test(NAME e2e.emit.tiny-2-layers.compile
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
          --target ratrain-emit-tiny-2-layers)
set_tests_properties(e2e.emit.tiny-2-layers.compile PROPERTIES TIMEOUT 600
  LABELS "e2e" FIXTURES_SETUP ratrain-emit-tiny-2-layers
  RESOURCE_LOCK ratrain-build-tree)
add_test(NAME e2e.emit.tiny.error.other-model
  COMMAND ${RATRAIN_EMIT_DIR}/emit-error-test.sh ${MPIEXEC_EXECUTABLE} 2
          $<TARGET_FILE:ratrain-emit-tiny> ${RATRAIN_CORPUS_TOKENS} other-model
          "trainer_state\\.json: the checkpoint was saved from a model with num_hidden_layers = 4, this model has 2"
          $<TARGET_FILE:ratrain-emit-tiny-2-layers>)
set_tests_properties(e2e.emit.tiny.error.other-model PROPERTIES TIMEOUT 600
  LABELS "e2e;mpi" PROCESSORS 2
  FIXTURES_REQUIRED "ratrain-emit-tiny;ratrain-emit-tiny-2-layers")
ratrain_add_emit_error_test(bf16-products
  "RATRAIN_BF16_PRODUCTS=fast: expected 'dot' \\(vdpbf16ps\\) or 'widen'")
ratrain_add_emit_error_test(missing-data
  "no-such-file\\.tok: cannot read the token file")
ratrain_add_emit_error_test(corrupt-data
  "cut\\.tok: the header says [0-9]+ tokens of [0-9] bytes \\([0-9]+ bytes\\), but the file holds 4064 bytes of tokens \\(truncated or corrupt\\)")
ratrain_add_emit_error_test(arena
  "the plan needs [0-9]+ bytes of DDR per rank, but a rank has 1048576 bytes \\(RATRAIN_DDR_LIMIT_BYTES\\)")
ratrain_add_emit_error_test(killed-rank
  "exited on signal 9|communication timed out|MPI failure")

# ZeRO-2 (gradients reduce-scattered into their own shard buffers): the same
# layer-flattened master and moment shards, the same checkpoints.
ratrain_add_emitted_program(ratrain-emit-tiny-zero2
  MODEL ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json
  MACHINE ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml
  PLAN "clusters=2 global-batch=8 zero=2")
add_test(NAME e2e.emit.tiny-zero2.compile
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
          --target ratrain-emit-tiny-zero2 ratrain-corpus ratrain-ckpt)
set_tests_properties(e2e.emit.tiny-zero2.compile PROPERTIES TIMEOUT 600
  LABELS "e2e" FIXTURES_SETUP ratrain-emit-tiny-zero2
  RESOURCE_LOCK ratrain-build-tree)
add_test(NAME e2e.emit.tiny-zero2.kill-in-save
  COMMAND ${RATRAIN_EMIT_DIR}/emit-kill-save-test.sh ${MPIEXEC_EXECUTABLE} 2
          $<TARGET_FILE:ratrain-emit-tiny-zero2> ${RATRAIN_CORPUS_TOKENS}
          $<TARGET_FILE:ratrain-ckpt>)
set_tests_properties(e2e.emit.tiny-zero2.kill-in-save PROPERTIES TIMEOUT 600
  LABELS "e2e;mpi" PROCESSORS 2 FIXTURES_REQUIRED ratrain-emit-tiny-zero2)

# Four ranks, pp 2 x dp 2 with ZeRO-1, on the host machine split into two
# virtual clusters per cluster (`ratrain machine --ranks-per-cluster 2`):
# every stage's data ranks write their shard files; kill mid-save, verify,
# resume bit for bit.
if(TARGET ratrain)
  set(_host4 ${CMAKE_CURRENT_BINARY_DIR}/host-2-ranks-per-cluster.yaml)
  add_custom_command(OUTPUT ${_host4}
    COMMAND ratrain machine ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml
            --ranks-per-cluster 2 -o ${_host4}
    DEPENDS ratrain ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml
    COMMENT "Splitting host.yaml into 4 virtual clusters")
  ratrain_add_emitted_program(ratrain-emit-tiny-pp2xdp2-zero
    MODEL ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json
    MACHINE ${_host4}
    PLAN "clusters=4 global-batch=8 pp=2 zero=1")
  add_test(NAME e2e.emit.tiny-pp2xdp2-zero.compile
    COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
            --target ratrain-emit-tiny-pp2xdp2-zero ratrain-corpus ratrain-ckpt)
  set_tests_properties(e2e.emit.tiny-pp2xdp2-zero.compile PROPERTIES
    TIMEOUT 600 LABELS "e2e" FIXTURES_SETUP ratrain-emit-tiny-pp2xdp2-zero
    RESOURCE_LOCK ratrain-build-tree)
  add_test(NAME e2e.emit.tiny-pp2xdp2-zero.kill-in-save
    COMMAND ${RATRAIN_EMIT_DIR}/emit-kill-save-test.sh ${MPIEXEC_EXECUTABLE} 4
            $<TARGET_FILE:ratrain-emit-tiny-pp2xdp2-zero>
            ${RATRAIN_CORPUS_TOKENS} $<TARGET_FILE:ratrain-ckpt>)
  set_tests_properties(e2e.emit.tiny-pp2xdp2-zero.kill-in-save PROPERTIES
    TIMEOUT 600 LABELS "e2e;mpi" PROCESSORS 4
    FIXTURES_REQUIRED ratrain-emit-tiny-pp2xdp2-zero)
endif()
