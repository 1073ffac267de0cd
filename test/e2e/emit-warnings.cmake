# Emitted C++ compiles without warnings (-Wall -Wextra -Werror) with g++ and
# clang++ (docs/emitter.md, "Warnings"). Included from test/e2e/CMakeLists.txt.
if(NOT (TARGET ratrain-translate AND TARGET ratrain-opt AND
        TARGET ratrain_program))
  return()
endif()
find_program(RATRAIN_GXX NAMES g++)
find_program(RATRAIN_CLANGXX NAMES clang++ clang++-14)
# A missing compiler fails the test with a message (both are in the deps).
set(_gxx g++)
set(_clangxx clang++)
if(RATRAIN_GXX)
  set(_gxx ${RATRAIN_GXX})
endif()
if(RATRAIN_CLANGXX)
  set(_clangxx ${RATRAIN_CLANGXX})
endif()
add_test(NAME e2e.emit.warnings
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/emit-warnings-test.sh
          $<TARGET_FILE:ratrain-translate> $<TARGET_FILE:ratrain-opt>
          ${RATRAIN_TOOLS_DIR}/ratrain-program.txt ${PROJECT_SOURCE_DIR}
          ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/emit-warnings
          ${_gxx} ${_clangxx})
set_tests_properties(e2e.emit.warnings PROPERTIES TIMEOUT 600 LABELS "e2e")
