# Tests of the leak-scan area: the reachability core on synthetic images, ground-truth
# programs under the agent (and under valgrind for comparison). Names start with leaks_.
ms_unit_test(leaks_unit_mark SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_leak_mark.c
  ${PROJECT_SOURCE_DIR}/src/agent/leak_mark.c)
target_include_directories(leaks_unit_mark PRIVATE ${PROJECT_SOURCE_DIR}/include
  ${PROJECT_SOURCE_DIR}/src)
