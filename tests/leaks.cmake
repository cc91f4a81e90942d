# Tests of the leak-scan area: the reachability core on synthetic images, ground-truth
# programs under the agent (and under valgrind for comparison). Names start with leaks_.
ms_unit_test(leaks_unit_mark SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_leak_mark.c
  ${PROJECT_SOURCE_DIR}/src/agent/leak_mark.c)
target_include_directories(leaks_unit_mark PRIVATE ${PROJECT_SOURCE_DIR}/include
  ${PROJECT_SOURCE_DIR}/src)

# Ground-truth programs: each prints what it expects (EXPECT, VALGRIND, RECORD lines).
# Built with -O2 (no frame pointers) like ordinary release code.
foreach(p stack register global tls thread_stack cycle tree interior freed mmap threads64)
  ms_test_program(lk_${p} SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/lk_${p}.c
    FLAGS -O2 -g LIBS Threads::Threads)
endforeach()
