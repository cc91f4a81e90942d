# Tests of the HPROF reader, graph, histogram, summary and `memsight hprof` command.
# Names start with hprof_ (the analysis area's tests are hprof_an_*, in
# hprof_analysis.cmake).
if(NOT TARGET ms_hprof)
  return()
endif()
ms_unit_test(hprof_unit_reader SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_hprof_reader.c LIBS ms_hprof)
ms_unit_test(hprof_unit_input SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_hprof_input.c LIBS ms_hprof)
ms_unit_test(hprof_unit_names SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_hprof_names.c LIBS ms_hprof)
ms_unit_test(hprof_unit_samples SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_hprof_samples.c LIBS ms_hprof)
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  ms_integration_test(hprof_samples ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_samples.py)
  ms_integration_test(hprof_bad_input ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_bad_input.py)
  ms_integration_test(hprof_gzip ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_gzip.py)
  find_program(MS_HPROF_JCMD jcmd)
  find_program(MS_HPROF_JAVAC javac)
  if(MS_HPROF_JCMD AND MS_HPROF_JAVAC)
    ms_integration_test(hprof_jdk17 ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_jdk17.py)
  endif()
endif()
# The libFuzzer target is built with clang by the test itself (whatever compiler builds
# the project) and runs for a bounded time over the committed seed corpus. With
# -DMEMSIGHT_FUZZ=ON and clang as the compiler it is also a regular target, for longer
# runs by hand: build/tests/fuzz/fuzz_hprof tests/fuzz/corpus/hprof
if(MEMSIGHT_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  file(GLOB MS_HPROF_FUZZ_SRC ${PROJECT_SOURCE_DIR}/src/hprof/*.c)
  add_executable(fuzz_hprof ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_hprof.c ${MS_HPROF_FUZZ_SRC})
  target_include_directories(fuzz_hprof PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(fuzz_hprof PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_hprof PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_hprof PRIVATE PkgConfig::ZLIB m)
  set_target_properties(fuzz_hprof PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MS_TEST_BIN}/fuzz)
endif()
find_program(MS_HPROF_CLANG clang)
if(MS_HPROF_CLANG)
  ms_integration_test(hprof_fuzz ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_fuzz.sh ${MS_HPROF_CLANG})
  # the two-thread passes of the reader under ThreadSanitizer
  ms_integration_test(hprof_tsan ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_tsan.sh ${MS_HPROF_CLANG})
endif()
