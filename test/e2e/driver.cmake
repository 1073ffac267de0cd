# The `ratrain` driver (docs/driver.md): `ratrain compile` builds an
# executable that trains, and `ratrain run` trains the tiny LLaMA on 4 ranks
# (host.yaml's 2 clusters split into 4 virtual clusters) as PP=2 x DP=2 and
# as PP=4 until the loss falls. Included from test/e2e/CMakeLists.txt; the
# lit tests of its arguments are in test/driver.
if(NOT (TARGET ratrain AND TARGET ratrain_program AND TARGET ratrain-corpus))
  return()
endif()

set(_driver_dir ${PROJECT_SOURCE_DIR}/test/driver)
set(_tiny ${PROJECT_SOURCE_DIR}/examples/models/tiny-llama.json)
set(_host ${PROJECT_SOURCE_DIR}/examples/machines/host.yaml)

add_test(NAME e2e.driver.compile
  COMMAND ${_driver_dir}/compile-test.sh $<TARGET_FILE:ratrain> ${_tiny}
          ${_host} ${RATRAIN_CORPUS_TOKENS}
          ${CMAKE_CURRENT_BINARY_DIR}/driver-compile)
set_tests_properties(e2e.driver.compile PROPERTIES TIMEOUT 600
  LABELS "e2e;mpi" PROCESSORS 2)

# --machine host: this host's calibrated machine file, measured on first use
# and cached by CPU (its own cache folder under the build tree).
if(TARGET ratrain-calibrate)
  add_test(NAME e2e.driver.host-machine
    COMMAND ${_driver_dir}/host-machine-test.sh $<TARGET_FILE:ratrain> ${_tiny}
            ${CMAKE_CURRENT_BINARY_DIR}/driver-host-machine)
  set_tests_properties(e2e.driver.host-machine PROPERTIES TIMEOUT 600
    LABELS "e2e;mpi" PROCESSORS 2 RUN_SERIAL TRUE)
endif()

# 60 steps of 8 sequences: the mean of the last 5 losses must be below 0.8 x
# the first.
foreach(pp 2 4)
  if(pp EQUAL 4)
    set(_name e2e.driver.pp4)
  else()
    set(_name e2e.driver.pp2xdp2)
  endif()
  add_test(NAME ${_name}
    COMMAND ${_driver_dir}/train-test.sh $<TARGET_FILE:ratrain> ${_tiny}
            ${_host} 4 60 ${CMAKE_CURRENT_BINARY_DIR}/driver-pp${pp}
            --pp ${pp})
  set_tests_properties(${_name} PROPERTIES TIMEOUT 600
    LABELS "e2e;mpi" PROCESSORS 4)
endforeach()

# A thin runtime (docs/runtime.md): the program library loads no LLVM, MLIR or
# Halide library (e2e.driver.compile checks an emitted program the same way).
add_test(NAME driver.program-library-deps
  COMMAND ${_driver_dir}/ldd-test.sh $<TARGET_FILE:ratrain_program>)
set_tests_properties(driver.program-library-deps PROPERTIES LABELS "driver")

# `ratrain compile --bundle`: the bundle, copied out of a temporary folder
# outside the build tree, trains 3 steps under mpirun -np 2 on its own.
add_test(NAME e2e.driver.bundle
  COMMAND ${_driver_dir}/bundle-test.sh $<TARGET_FILE:ratrain> ${_tiny}
          ${_host} ${CMAKE_BINARY_DIR})
set_tests_properties(e2e.driver.bundle PROPERTIES TIMEOUT 600
  LABELS "e2e;mpi" PROCESSORS 2)
