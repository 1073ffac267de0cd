# Scaled-down variants of the models people train today (issue 16;
# test/e2e/Inputs/models/, the configs of examples/models/ with 2-3 layers
# and hidden 128): each is imported, planned for two host clusters, lowered,
# emitted, compiled and trained on the byte corpus on 2 ranks; the loss must
# fall and the checkpoint carry the family's HF names.
#  - tiny-llama-3.2: Llama 3.2's llama3 rope_scaling (factor 8, original
#    context 64, so every band of the 16 rotary pairs is used), GQA 4/2;
#  - tiny-mistral: model_type mistral, sliding_window 128 = the sequence
#    length the importer picks (plain causal attention), GQA 4/1;
#  - tiny-baichuan2-7b: Baichuan2-7B's rotary positions with W_pack and
#    NormHead.
# Included from test/e2e/CMakeLists.txt after emit-cpp.cmake.
if(NOT COMMAND ratrain_add_emitted_program OR NOT TARGET ratrain-corpus OR
   NOT TARGET ratrain-ckpt)
  return()
endif()

set(RATRAIN_MODEL_STEPS 20 CACHE STRING
    "steps of the scaled-down models' training tests")

# ratrain_add_model_train_test(NAME PLAN NAME_PATTERN...)
function(ratrain_add_model_train_test name plan)
  set(target ratrain-emit-${name})
  ratrain_add_emitted_program(${target}
    MODEL ${CMAKE_CURRENT_SOURCE_DIR}/Inputs/models/${name}.json
    MACHINE ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml
    PLAN "${plan}")
  add_test(NAME e2e.models.${name}.compile
    COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
            --target ${target} ratrain-corpus ratrain-ckpt)
  set_tests_properties(e2e.models.${name}.compile PROPERTIES TIMEOUT 600
    LABELS "e2e" FIXTURES_SETUP ${target} RESOURCE_LOCK ratrain-build-tree)
  add_test(NAME e2e.models.${name}.train
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/model-train-test.sh
            ${MPIEXEC_EXECUTABLE} 2 $<TARGET_FILE:${target}>
            ${RATRAIN_CORPUS_TOKENS} ${RATRAIN_MODEL_STEPS}
            $<TARGET_FILE:ratrain-ckpt> ${ARGN})
  set_tests_properties(e2e.models.${name}.train PROPERTIES TIMEOUT 600
    LABELS "e2e;mpi" PROCESSORS 2 FIXTURES_REQUIRED ${target})
endfunction()

ratrain_add_model_train_test(tiny-llama-3.2 "clusters=2 global-batch=8 pp=2"
  "model\\.layers\\.1\\.self_attn\\.q_proj\\.weight" "lm_head\\.weight")
ratrain_add_model_train_test(tiny-mistral "clusters=2 global-batch=8 pp=1"
  "model\\.layers\\.2\\.mlp\\.gate_proj\\.weight" "model\\.norm\\.weight")
ratrain_add_model_train_test(tiny-baichuan2-7b "clusters=2 global-batch=8"
  "model\\.layers\\.1\\.self_attn\\.W_pack\\.weight" "!q_proj")
