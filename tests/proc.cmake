# Tests of the /proc accounting area: parsers, categories, watch trackers (unit), and
# runs of `memsight smaps/top/watch` against ground-truth programs (integration).
ms_unit_test(proc_unit_smaps SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_proc_smaps.c LIBS ms_core)
ms_unit_test(proc_unit_status SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_proc_status.c LIBS ms_core)
ms_unit_test(proc_unit_accounting SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_proc_accounting.c
             LIBS ms_analysis ms_core)
ms_unit_test(proc_unit_watch SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_proc_watch.c
             LIBS ms_analysis ms_core m)

ms_test_program(pa_layout SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/pa_layout.c
                FLAGS -O1 LIBS Threads::Threads)
ms_test_program(pa_grow SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/pa_grow.c FLAGS -O1)
ms_test_program(pa_free SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/pa_free.c FLAGS -O1)

find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  foreach(t smaps top watch watch_java explain explain_mallinfo bss)
    ms_integration_test(proc_${t} ${Python3_EXECUTABLE}
                        ${CMAKE_CURRENT_SOURCE_DIR}/integration/proc_${t}.py)
  endforeach()
endif()

# libFuzzer target for the /proc parsers, built with clang directly like the other
# fuzzers, run for a bounded 10 s from the captured and hand-made texts.
set(MS_FUZZ_PROC ${MS_TEST_BIN}/fuzz/fuzz_proc)
set(MS_FUZZ_PROC_SRCS ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_proc.c
  ${PROJECT_SOURCE_DIR}/src/core/proc_read.c ${PROJECT_SOURCE_DIR}/src/core/proc_smaps.c
  ${PROJECT_SOURCE_DIR}/src/core/proc_status.c ${PROJECT_SOURCE_DIR}/src/core/proc_task.c
  ${PROJECT_SOURCE_DIR}/src/core/fileio.c ${PROJECT_SOURCE_DIR}/src/core/safe_file.c ${PROJECT_SOURCE_DIR}/src/core/snapshot_read.c
  ${PROJECT_SOURCE_DIR}/src/analysis/accounting.c ${PROJECT_SOURCE_DIR}/src/analysis/watch.c
  ${PROJECT_SOURCE_DIR}/src/analysis/watch_agent.c
  ${PROJECT_SOURCE_DIR}/src/analysis/symbolize.c)
if(MS_CLANG_FUZZER)
  ms_clang_fuzzer(proc_fuzz_bin ${MS_FUZZ_PROC} COMMENT "Building the /proc parser fuzzer with clang"
    SOURCES ${MS_FUZZ_PROC_SRCS} LIBS -ldw -lelf -lz -lzstd -lstdc++ -lm)
  add_test(NAME proc_fuzz COMMAND sh -c
    "rm -rf \"$1\" && mkdir -p \"$1\" && cp \"$2\"/* \"$1\"/ && \"$0\" -max_total_time=10 -timeout=10 -rss_limit_mb=1024 -max_len=65536 -artifact_prefix=\"$1\"/ -print_final_stats=1 \"$1\""
    ${MS_FUZZ_PROC} ${MS_TEST_BIN}/fuzz/corpus-proc ${PROJECT_SOURCE_DIR}/tests/data/proc)
  set_tests_properties(proc_fuzz PROPERTIES TIMEOUT 120)
endif()
