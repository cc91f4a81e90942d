# Tests of the HPROF reader, graph, histogram, summary and `memsight hprof` command.
# Names start with hprof_ (the analysis area's tests are hprof_an_*, in
# hprof_analysis.cmake).
if(NOT TARGET ms_hprof)
  return()
endif()
ms_unit_test(hprof_unit_reader SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_hprof_reader.c LIBS ms_hprof)
ms_unit_test(hprof_unit_names SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_hprof_names.c LIBS ms_hprof)
ms_unit_test(hprof_unit_samples SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_hprof_samples.c LIBS ms_hprof)
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  ms_integration_test(hprof_samples ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_samples.py)
  ms_integration_test(hprof_bad_input ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_bad_input.py)
  find_program(MS_HPROF_JCMD jcmd)
  find_program(MS_HPROF_JAVAC javac)
  if(MS_HPROF_JCMD AND MS_HPROF_JAVAC)
    ms_integration_test(hprof_jdk17 ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_jdk17.py)
  endif()
endif()
# The libFuzzer target is built with clang by the test itself (whatever compiler builds
# the project) and runs for a bounded time over the committed seed corpus.
find_program(MS_HPROF_CLANG clang)
if(MS_HPROF_CLANG)
  ms_integration_test(hprof_fuzz ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_fuzz.sh ${MS_HPROF_CLANG})
endif()
