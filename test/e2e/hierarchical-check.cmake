# cmake -DFILE=<emitted program .cpp> -P hierarchical-check.cmake: fails unless
# the program issues hierarchical reduce-scatters and all-gathers.
file(READ ${FILE} text)
foreach(call reduceScatter allGather)
  string(REGEX MATCH "emit::${call}\\([^;]*CollectiveAlgorithm::Hierarchical\\)"
         found "${text}")
  if(NOT found)
    message(FATAL_ERROR "${FILE}: no hierarchical ${call}")
  endif()
  message(STATUS "${call}: ${found}")
endforeach()
