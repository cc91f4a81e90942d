# Tests of the report area: snapshot reader, symbolizer, `memsight report` and `memsight run`.
# Names start with report_.
ms_unit_test(report_snapshot_read SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_snapshot_read.c
  LIBS ms_core)
# The symbolizer checks itself: built -O2 -g with known functions and an inlined helper.
ms_unit_test(report_symbolize SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_symbolize.c
  LIBS ms_analysis)
target_compile_options(report_symbolize PRIVATE -O2 -g)
# `memsight report` on snapshots built byte by byte by report_mksnap.py (no agent needed).
ms_integration_test(report_cli ${CMAKE_CURRENT_SOURCE_DIR}/integration/report_cli.py)
# `memsight run`: streams, exit status, signals, exit summary, static and setuid programs.
ms_integration_test(report_run ${CMAKE_CURRENT_SOURCE_DIR}/integration/report_run.sh)
# `make demo` end to end, with the demo's known leaks (needs the agent and its leak scan).
ms_integration_test(report_demo ${CMAKE_CURRENT_SOURCE_DIR}/integration/report_demo.sh)
# libFuzzer target for the snapshot reader and the reports, built with clang directly
# (the rest of the tree may use gcc) and run for a bounded 20 s from the committed seeds.
set(MS_FUZZ_SNAPSHOT_SRCS
  ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_snapshot.c
  ${PROJECT_SOURCE_DIR}/src/core/snapshot_read.c ${PROJECT_SOURCE_DIR}/src/core/fileio.c
  ${PROJECT_SOURCE_DIR}/src/core/safe_file.c ${PROJECT_SOURCE_DIR}/src/core/labels.c
  ${PROJECT_SOURCE_DIR}/src/analysis/report_json.c ${PROJECT_SOURCE_DIR}/src/analysis/report_text.c
  ${PROJECT_SOURCE_DIR}/src/analysis/sites.c
  ${PROJECT_SOURCE_DIR}/src/analysis/threads_report.c
  ${PROJECT_SOURCE_DIR}/src/analysis/report_model.c ${PROJECT_SOURCE_DIR}/src/analysis/json_writer.c
  ${PROJECT_SOURCE_DIR}/src/analysis/symbolize.c ${PROJECT_SOURCE_DIR}/src/analysis/stack_agg.c)
set(MS_FUZZ_SNAPSHOT ${MS_TEST_BIN}/fuzz/fuzz_snapshot)
if(MS_CLANG_FUZZER)
  ms_clang_fuzzer(report_fuzz_snapshot_bin ${MS_FUZZ_SNAPSHOT} COMMENT "Building the snapshot fuzzer with clang"
    SOURCES ${MS_FUZZ_SNAPSHOT_SRCS} LIBS -ldw -lelf -lz -lstdc++ -lm)
  add_test(NAME report_fuzz_snapshot COMMAND sh -c
    "rm -rf \"$1\" && mkdir -p \"$1\" && cp \"$2\"/* \"$1\"/ && \"$0\" -max_total_time=20 -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \"$1\""
    ${MS_FUZZ_SNAPSHOT} ${MS_TEST_BIN}/fuzz/corpus-snapshot ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/snapshot)
  set_tests_properties(report_fuzz_snapshot PROPERTIES TIMEOUT 120)
else()
  add_test(NAME report_fuzz_snapshot COMMAND sh -c
    "echo 'skip: clang with libFuzzer (Debian: clang, libclang-rt-dev) is not available'")
endif()
# Real programs under `memsight run`: python3, sqlite3, git --version.
ms_integration_test(report_real ${CMAKE_CURRENT_SOURCE_DIR}/integration/report_real.sh)
# `memsight merge` of real runs of mg_parts: totals, live blocks with their stacks and
# processes, leak-scan results and peaks of the merged file against the inputs'.
ms_test_program(mg_parts SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/mg_parts.c
  FLAGS -O1 -g -fno-omit-frame-pointer -fno-inline)
ms_integration_test(report_merge ${CMAKE_CURRENT_SOURCE_DIR}/integration/report_merge.py)
ms_integration_test(report_install ${CMAKE_CURRENT_SOURCE_DIR}/integration/report_install.sh)
ms_integration_test(report_suppress ${CMAKE_CURRENT_SOURCE_DIR}/integration/report_suppress.py)
ms_integration_test(report_messages ${CMAKE_CURRENT_SOURCE_DIR}/integration/report_messages.py)
# `memsight merge` sums the inputs' temporary allocations and size histograms.
ms_integration_test(report15_merge_temp_hist ${CMAKE_CURRENT_SOURCE_DIR}/integration/report_merge_temp_hist.py)
# The compact JSON report (--json-frames=table), expanded, equals the full form.
ms_integration_test(report15_json_table ${CMAKE_CURRENT_SOURCE_DIR}/integration/report_json_table.py)
# Collapsed stacks as flamegraph.pl and speedscope read them, against the JSON frames.
ms_integration_test(report15_collapsed ${CMAKE_CURRENT_SOURCE_DIR}/integration/report_collapsed.py)
# libFuzzer target for the suppression-file parser, the rules applied to a leak scan and
# the function filter, run for a bounded 10 s from the committed seeds.
set(MS_FUZZ_SUPPRESS ${MS_TEST_BIN}/fuzz/fuzz_suppress)
if(MS_CLANG_FUZZER)
  ms_clang_fuzzer(report_fuzz_suppress_bin ${MS_FUZZ_SUPPRESS} COMMENT "Building the suppression-file fuzzer with clang"
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_suppress.c ${PROJECT_SOURCE_DIR}/src/analysis/suppress.c
      ${PROJECT_SOURCE_DIR}/src/analysis/report_model.c ${PROJECT_SOURCE_DIR}/src/analysis/stack_agg.c
      ${PROJECT_SOURCE_DIR}/src/analysis/symbolize.c ${PROJECT_SOURCE_DIR}/src/core/snapshot_read.c
      ${PROJECT_SOURCE_DIR}/src/core/fileio.c ${PROJECT_SOURCE_DIR}/src/core/safe_file.c
      ${PROJECT_SOURCE_DIR}/src/core/labels.c
    LIBS -ldw -lelf -lz -lstdc++ -lm)
  add_test(NAME report15_fuzz_suppress COMMAND sh -c
    "rm -rf \"$1\" && mkdir -p \"$1\" && cp \"$2\"/* \"$1\"/ && \"$0\" -max_total_time=10 -timeout=10 -rss_limit_mb=1024 -max_len=8192 -artifact_prefix=\"$1\"/ -print_final_stats=1 \"$1\""
    ${MS_FUZZ_SUPPRESS} ${MS_TEST_BIN}/fuzz/corpus-suppress ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/suppress)
  set_tests_properties(report15_fuzz_suppress PROPERTIES TIMEOUT 120)
else()
  add_test(NAME report15_fuzz_suppress COMMAND sh -c
    "echo 'skip: clang with libFuzzer (Debian: clang, libclang-rt-dev) is not available'")
endif()
# Allocation sites of the text report: the innermost frame of the program (--sites).
ms_test_program(st_sites SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/st_sites.cpp
  FLAGS -O1 -g -fno-omit-frame-pointer)
ms_integration_test(report15_sites ${CMAKE_CURRENT_SOURCE_DIR}/integration/report_sites.py)
