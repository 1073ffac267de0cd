# Optimizer-state and master offload (docs/lowering.md, "Offloaded optimizer
# states and masters"): the tiny LLaMA on two pipeline stages with a forced
# offload plan is lowered, emitted, compiled and trained; offload only moves
# data, so its losses must equal those of the same plan without offload bit
# for bit, and a checkpoint of it must resume bit-identically. Included from
# test/e2e/CMakeLists.txt after emit-cpp.cmake, whose ratrain-emit-tiny-pp2,
# ratrain-emit-tiny-bf16 and ratrain-emit-tiny (the same plans without
# offload) are the references.
if(NOT COMMAND ratrain_add_emitted_program OR NOT TARGET ratrain-corpus OR
   NOT TARGET ratrain-emit-tiny-pp2 OR NOT TARGET ratrain-emit-tiny-bf16 OR
   NOT TARGET ratrain-emit-tiny)
  return()
endif()

set(RATRAIN_OFFLOAD_STEPS 20)
set(offload_model ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json)
set(offload_host ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml)

# host.yaml with its offload tier as storage (files under
# RATRAIN_OFFLOAD_DIR) instead of host memory.
set(offload_storage ${CMAKE_CURRENT_BINARY_DIR}/offload/host-storage.yaml)
file(READ ${offload_host} offload_yaml)
string(REPLACE "\n  kind: host\n" "\n  kind: storage\n" offload_storage_yaml
       "${offload_yaml}")
file(WRITE ${offload_storage} "${offload_storage_yaml}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${offload_host})

# host.yaml streaming offloaded states in 1 MB chunks (offload.chunk_bytes):
# a tiny LLaMA layer's Adam state (5.8 MB; 2.9 MB per ZeRO-1 shard) and its
# bf16 run's fp32 master (2.9 MB) stream through their windows in several
# chunks, with tensors spanning chunks (docs/lowering.md, "Streaming in
# chunks").
set(offload_chunked ${CMAKE_CURRENT_BINARY_DIR}/offload/host-chunked.yaml)
string(REPLACE "\n  chunk_bytes: 0\n" "\n  chunk_bytes: 1000000\n" offload_yaml
       "${offload_yaml}")
string(FIND "${offload_yaml}" "chunk_bytes: 1000000" offload_chunk_found)
if(offload_chunk_found EQUAL -1)
  message(FATAL_ERROR "offload.cmake: no 'chunk_bytes: 0' in ${offload_host}")
endif()
file(WRITE ${offload_chunked} "${offload_yaml}")
# Both: states streamed in chunks, each piece a file of the storage tier.
set(offload_storage_chunked
    ${CMAKE_CURRENT_BINARY_DIR}/offload/host-storage-chunked.yaml)
string(REPLACE "\n  kind: host\n" "\n  kind: storage\n"
       offload_storage_chunked_yaml "${offload_yaml}")
file(WRITE ${offload_storage_chunked} "${offload_storage_chunked_yaml}")

# The reference of the ZeRO-1 bf16 case with masters offloaded and streamed:
# the same plan (pp 1 x dp 2, ZeRO-1) without offload.
ratrain_add_emitted_program(ratrain-offload-reference-zero1-bf16
  MODEL ${offload_model} MACHINE ${offload_host}
  PLAN "clusters=2 global-batch=8" DTYPE bf16)

# name | --dtype (empty: the model's f32) | plan | reference program |
# machine (empty: host.yaml)
# pp 2 x dp 1 with Adam m, v offloaded; the same in bf16 with the fp32
# masters offloaded too; pp 1 x dp 2 under ZeRO-1 (the planner's choice for
# global batch 8), where each rank offloads its shards; pp 2 with the
# storage tier (trains the same; --ckpt is refused); the first three again
# with the states streamed in chunks (host-chunked.yaml), and pp 1 x dp 2
# under ZeRO-1 in bf16 with the masters offloaded and streamed (shard pieces
# of the master initialized per chunk).
set(offload_cases
  "optimizer||clusters=2 global-batch=4 pp=2 offload=optimizer|ratrain-emit-tiny-pp2|"
  "master-bf16|bf16|clusters=2 global-batch=4 pp=2 offload=master|ratrain-emit-tiny-bf16|"
  "zero1-optimizer||clusters=2 global-batch=8 offload=optimizer|ratrain-emit-tiny|"
  "storage||clusters=2 global-batch=4 pp=2 offload=optimizer|ratrain-emit-tiny-pp2|${offload_storage}"
  "chunked-optimizer||clusters=2 global-batch=4 pp=2 offload=optimizer|ratrain-emit-tiny-pp2|${offload_chunked}"
  "chunked-master-bf16|bf16|clusters=2 global-batch=4 pp=2 offload=master|ratrain-emit-tiny-bf16|${offload_chunked}"
  "chunked-zero1-optimizer||clusters=2 global-batch=8 offload=optimizer|ratrain-emit-tiny|${offload_chunked}"
  "chunked-zero1-master-bf16|bf16|clusters=2 global-batch=8 offload=master|ratrain-offload-reference-zero1-bf16|${offload_chunked}"
  "storage-chunked-master-bf16|bf16|clusters=2 global-batch=4 pp=2 offload=master|ratrain-emit-tiny-bf16|${offload_storage_chunked}")
foreach(case ${offload_cases})
  string(REPLACE "|" ";" fields "${case}")
  list(GET fields 0 name)
  list(GET fields 1 dtype)
  list(GET fields 2 plan)
  list(GET fields 3 reference)
  list(GET fields 4 machine)
  if(NOT machine)
    set(machine ${offload_host})
  endif()
  set(target ratrain-offload-${name})
  set(dtype_args)
  if(dtype)
    set(dtype_args DTYPE ${dtype})
  endif()
  ratrain_add_emitted_program(${target}
    MODEL ${offload_model} MACHINE ${machine}
    PLAN "${plan}" ${dtype_args})
  add_test(NAME e2e.offload.${name}.compile
    COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
            --target ${target} ${reference} ratrain-corpus)
  set_tests_properties(e2e.offload.${name}.compile PROPERTIES TIMEOUT 600
    LABELS "e2e" FIXTURES_SETUP ratrain-offload-${name}
    RESOURCE_LOCK ratrain-build-tree)
  add_test(NAME e2e.offload.${name}.equal-losses
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/equal-losses-test.sh
            ${MPIEXEC_EXECUTABLE} 2 $<TARGET_FILE:${target}>
            $<TARGET_FILE:${reference}> ${RATRAIN_CORPUS_TOKENS}
            ${RATRAIN_OFFLOAD_STEPS} "offload")
  set_tests_properties(e2e.offload.${name}.equal-losses PROPERTIES
    TIMEOUT 600 LABELS "e2e;mpi" PROCESSORS 2
    FIXTURES_REQUIRED ratrain-offload-${name})
  if(name STREQUAL "storage-chunked-master-bf16" AND TARGET ratrain-ckpt)
    # --init-from writes the pretrained masters through their staging
    # copies into the storage tier's files.
    add_test(NAME e2e.offload.${name}.init-from
      COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/init-from-test.sh
              ${MPIEXEC_EXECUTABLE} 2 $<TARGET_FILE:${target}>
              ${RATRAIN_CORPUS_TOKENS} $<TARGET_FILE:ratrain-ckpt>
              ${offload_model} F32 1)
    set_tests_properties(e2e.offload.${name}.init-from PROPERTIES
      TIMEOUT 600 LABELS "e2e;mpi" PROCESSORS 2
      FIXTURES_REQUIRED ratrain-offload-${name})
  endif()
  if(name STREQUAL "storage")
    # The storage tier's host cache (RATRAIN_OFFLOAD_HOST_CACHE_BYTES).
    add_test(NAME e2e.offload.storage.host-cache
      COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/offload-host-cache-test.sh
              ${MPIEXEC_EXECUTABLE} 2 $<TARGET_FILE:${target}>
              ${RATRAIN_CORPUS_TOKENS})
    set_tests_properties(e2e.offload.storage.host-cache PROPERTIES
      TIMEOUT 600 LABELS "e2e;mpi" PROCESSORS 2
      FIXTURES_REQUIRED ratrain-offload-storage)
  endif()
  # Checkpoints save the tier copies (for the storage tier, the files read
  # into host copies before a save, written back after a load); a resume
  # loads them back.
  add_test(NAME e2e.offload.${name}.resume
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/emit-resume-test.sh
            ${MPIEXEC_EXECUTABLE} 2 $<TARGET_FILE:${target}>
            ${RATRAIN_CORPUS_TOKENS})
  set_tests_properties(e2e.offload.${name}.resume PROPERTIES TIMEOUT 600
    LABELS "e2e;mpi" PROCESSORS 2 FIXTURES_REQUIRED ratrain-offload-${name})
endforeach()
