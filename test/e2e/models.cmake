# Scaled-down variants of the models people train today (issue 16;
# test/e2e/Inputs/models/, the configs of examples/models/ with 2-3 layers
# and hidden 128): each is imported, planned for two host clusters, lowered,
# emitted, compiled and trained on the byte corpus on 2 ranks; the loss must
# fall and the checkpoint carry the family's HF names.
#  - tiny-llama-3.2: Llama 3.2's llama3 rope_scaling (factor 8, original
#    context 64, so every band of the 16 rotary pairs is used), GQA 4/2,
#    tied embeddings on 2 pipeline stages (the LM head's view and gradient
#    travel between the first and the last stage);
#  - tiny-smollm2: SmolLM2's 64-wide heads (3 of them, 1 kv head), tied
#    embeddings on one stage, dp 2 with ZeRO-1 (the planner's choice);
#  - tiny-qwen2.5: Qwen2.5's q/k/v biases, tied, on 2 stages;
#  - tiny-mistral: model_type mistral, sliding_window 128 on 256-token
#    sequences (the windowed attention kernels), GQA 4/1;
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

# A tied model's checkpoint has no lm_head.weight (as HF's).
ratrain_add_model_train_test(tiny-llama-3.2 "clusters=2 global-batch=8 pp=2"
  "model\\.layers\\.1\\.self_attn\\.q_proj\\.weight"
  "model\\.embed_tokens\\.weight" "!lm_head")
ratrain_add_model_train_test(tiny-smollm2 "clusters=2 global-batch=8 pp=1 zero=1"
  "model\\.layers\\.2\\.mlp\\.down_proj\\.weight" "!lm_head")
ratrain_add_model_train_test(tiny-qwen2.5 "clusters=2 global-batch=8 pp=2"
  "model\\.layers\\.1\\.self_attn\\.q_proj\\.bias" "!lm_head")
ratrain_add_model_train_test(tiny-mistral "clusters=2 global-batch=8 pp=1"
  "model\\.layers\\.2\\.mlp\\.gate_proj\\.weight" "model\\.norm\\.weight")
# head_dim 64 in a 128-wide model with 4 heads: q and o_proj are 256 wide.
ratrain_add_model_train_test(tiny-mistral-nemo "clusters=2 global-batch=8 pp=2"
  "model\\.layers\\.1\\.self_attn\\.o_proj\\.weight")
ratrain_add_model_train_test(tiny-baichuan2-7b "clusters=2 global-batch=8"
  "model\\.layers\\.1\\.self_attn\\.W_pack\\.weight" "!q_proj")

# Tied embeddings do the same arithmetic wherever the LM head runs: the tiny
# SmolLM2 on one cluster (the head reads the embedding's view and its
# gradient is added on the same rank), on 2 pipeline stages (the view and
# the gradient travel between the stages) and on 2 ZeRO-1 replicas trains
# with losses equal within RATRAIN_TIED_TOLERANCE (fp32: the layouts differ
# only in the order of the data-parallel sum).
set(RATRAIN_TIED_STEPS 30 CACHE STRING "steps of the tied-embedding runs")
set(RATRAIN_TIED_TOLERANCE 1e-5 CACHE STRING
    "largest relative loss deviation between the tied-embedding layouts")
set(tied_dir ${CMAKE_CURRENT_BINARY_DIR}/tied)
set(tied_targets)
foreach(layout "single|1|clusters=1" "pp2|2|clusters=2 pp=2"
               "dp2-zero1|2|clusters=2 pp=1 zero=1")
  string(REPLACE "|" ";" fields "${layout}")
  list(GET fields 0 name)
  list(GET fields 1 ranks)
  list(GET fields 2 plan)
  set(target ratrain-tied-${name})
  ratrain_add_emitted_program(${target}
    MODEL ${CMAKE_CURRENT_SOURCE_DIR}/Inputs/models/tiny-smollm2.json
    MACHINE ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml
    PLAN "${plan} global-batch=4")
  list(APPEND tied_targets ${target})
  add_test(NAME e2e.tied.run.${name}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/equivalence-run.sh
            ${MPIEXEC_EXECUTABLE} ${ranks} $<TARGET_FILE:${target}>
            ${RATRAIN_CORPUS_TOKENS} ${RATRAIN_TIED_STEPS} 7
            ${tied_dir}/${name}.jsonl)
  set_tests_properties(e2e.tied.run.${name} PROPERTIES TIMEOUT 300
    LABELS "e2e;mpi" PROCESSORS ${ranks}
    FIXTURES_REQUIRED ratrain-tied-programs FIXTURES_SETUP ratrain-tied-${name})
endforeach()
file(MAKE_DIRECTORY ${tied_dir})
add_test(NAME e2e.tied.compile
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
          --target ${tied_targets} ratrain-corpus)
set_tests_properties(e2e.tied.compile PROPERTIES TIMEOUT 900
  LABELS "e2e" FIXTURES_SETUP ratrain-tied-programs
  RESOURCE_LOCK ratrain-build-tree)
foreach(other pp2 dp2-zero1)
  add_test(NAME e2e.tied.single~${other}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/equivalence-compare.sh
            ${tied_dir}/single.jsonl ${tied_dir}/${other}.jsonl
            ${RATRAIN_TIED_TOLERANCE} ${RATRAIN_TIED_STEPS})
  set_tests_properties(e2e.tied.single~${other} PROPERTIES TIMEOUT 60
    LABELS "e2e" FIXTURES_REQUIRED "ratrain-tied-single;ratrain-tied-${other}")
endforeach()

# Pretrained starting points (docs/runtime.md, "Starting from a HuggingFace
# model"): an HF directory written by an independent writer
# (hf-directory.py) starts the tiny Llama-3.2 (2 stages, tied) from BF16
# weights in 2 shards and the tiny SmolLM2 (ZeRO-1 over 2 replicas, tied)
# from F32 weights in one file; --init-from and --resume of the same weights
# give the same losses, ratrain-ckpt export round-trips bit for bit, and bad
# directories are refused (init-from-test.sh).
foreach(case "tiny-llama-3.2|BF16|2" "tiny-smollm2|F32|1")
  string(REPLACE "|" ";" fields "${case}")
  list(GET fields 0 name)
  list(GET fields 1 dtype)
  list(GET fields 2 shards)
  add_test(NAME e2e.models.${name}.init-from
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/init-from-test.sh
            ${MPIEXEC_EXECUTABLE} 2 $<TARGET_FILE:ratrain-emit-${name}>
            ${RATRAIN_CORPUS_TOKENS} $<TARGET_FILE:ratrain-ckpt>
            ${CMAKE_CURRENT_SOURCE_DIR}/Inputs/models/${name}.json ${dtype}
            ${shards})
  set_tests_properties(e2e.models.${name}.init-from PROPERTIES TIMEOUT 600
    LABELS "e2e;mpi" PROCESSORS 2 FIXTURES_REQUIRED ratrain-emit-${name})
endforeach()

# The learning-rate schedule flags reach the updates and the step log.
add_test(NAME e2e.models.tiny-mistral.lr-schedule
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/lr-schedule-test.sh
          ${MPIEXEC_EXECUTABLE} 2 $<TARGET_FILE:ratrain-emit-tiny-mistral>
          ${RATRAIN_CORPUS_TOKENS})
set_tests_properties(e2e.models.tiny-mistral.lr-schedule PROPERTIES
  TIMEOUT 600 LABELS "e2e;mpi" PROCESSORS 2
  FIXTURES_REQUIRED ratrain-emit-tiny-mistral)

# Data formats: a Megatron-LM indexed dataset and a flat uint16 array of the
# corpus train with the same losses as its RATrain token file.
add_test(NAME e2e.models.tiny-mistral.data-formats
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/data-formats-test.sh
          ${MPIEXEC_EXECUTABLE} 2 $<TARGET_FILE:ratrain-emit-tiny-mistral>
          ${RATRAIN_CORPUS_TOKENS})
set_tests_properties(e2e.models.tiny-mistral.data-formats PROPERTIES
  TIMEOUT 600 LABELS "e2e;mpi" PROCESSORS 2
  FIXTURES_REQUIRED ratrain-emit-tiny-mistral)

# Validation (docs/runtime.md, "Validation"): held-out losses every N steps
# on the tiny SmolLM2 (ZeRO-1 over 2 replicas), the training unchanged.
add_test(NAME e2e.models.tiny-smollm2.validation
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/validation-test.sh
          ${MPIEXEC_EXECUTABLE} 2 $<TARGET_FILE:ratrain-emit-tiny-smollm2>
          ${RATRAIN_CORPUS_TOKENS} $<TARGET_FILE:ratrain-ckpt>
          ${CMAKE_CURRENT_SOURCE_DIR}/Inputs/models/tiny-smollm2.json)
set_tests_properties(e2e.models.tiny-smollm2.validation PROPERTIES
  TIMEOUT 600 LABELS "e2e;mpi" PROCESSORS 2
  FIXTURES_REQUIRED ratrain-emit-tiny-smollm2)
