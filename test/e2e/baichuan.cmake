# Baichuan models (docs/lowering.md, "Baichuan"): the tiny Baichuan
# (examples/models/tiny-baichuan.json: ALiBi attention, packed W_pack
# projection, Baichuan2's NormHead) on two clusters (the planner picks pp 1 x
# dp 2, ZeRO-1) is lowered, emitted, compiled and trained on the corpus; the
# lowered program must be the NormHead one (norm_head, scratch.normhead),
# the loss must fall and the checkpoint must hold the HF
# names (self_attn.W_pack.weight).
# Included from test/e2e/CMakeLists.txt after emit-cpp.cmake.
if(NOT COMMAND ratrain_add_emitted_program OR NOT TARGET ratrain-corpus OR
   NOT TARGET ratrain-ckpt)
  return()
endif()

set(RATRAIN_BAICHUAN_STEPS 30 CACHE STRING
    "steps of the tiny Baichuan's training test")

ratrain_add_emitted_program(ratrain-emit-tiny-baichuan
  MODEL ${PROJECT_SOURCE_DIR}/examples/models/tiny-baichuan.json
  MACHINE ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml
  PLAN "clusters=2 global-batch=8")
add_test(NAME e2e.emit.tiny-baichuan.compile
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
          --target ratrain-emit-tiny-baichuan ratrain-corpus ratrain-ckpt)
set_tests_properties(e2e.emit.tiny-baichuan.compile PROPERTIES TIMEOUT 600
  LABELS "e2e" FIXTURES_SETUP ratrain-emit-tiny-baichuan
  RESOURCE_LOCK ratrain-build-tree)
# The program that trains is the NormHead one: its lowered module (written
# next to the emitted C++ by ratrain_add_emitted_program) records norm_head
# and holds the normalized-weight region.
add_test(NAME e2e.emit.tiny-baichuan.normhead
  COMMAND sh -c "grep -q 'norm_head = true' \"$1\" && grep -q scratch.normhead \"$1\""
          normhead-check ${CMAKE_CURRENT_BINARY_DIR}/ratrain-emit-tiny-baichuan.mlir)
set_tests_properties(e2e.emit.tiny-baichuan.normhead PROPERTIES
  LABELS "e2e" FIXTURES_REQUIRED ratrain-emit-tiny-baichuan)
# The checkpoint has W_pack for each of the 4 decoder layers and no
# separate q/k/v projection (model-train-test.sh's name patterns).
add_test(NAME e2e.emit.tiny-baichuan.train
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/model-train-test.sh
          ${MPIEXEC_EXECUTABLE} 2 $<TARGET_FILE:ratrain-emit-tiny-baichuan>
          ${RATRAIN_CORPUS_TOKENS} ${RATRAIN_BAICHUAN_STEPS}
          $<TARGET_FILE:ratrain-ckpt>
          "model\\.layers\\.0\\.self_attn\\.W_pack\\.weight"
          "model\\.layers\\.1\\.self_attn\\.W_pack\\.weight"
          "model\\.layers\\.2\\.self_attn\\.W_pack\\.weight"
          "model\\.layers\\.3\\.self_attn\\.W_pack\\.weight"
          "!q_proj|k_proj|v_proj")
set_tests_properties(e2e.emit.tiny-baichuan.train PROPERTIES TIMEOUT 600
  LABELS "e2e;mpi" PROCESSORS 2
  FIXTURES_REQUIRED ratrain-emit-tiny-baichuan)
