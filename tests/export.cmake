# Tests of the exports area: pprof, collapsed stacks, flame graphs, the HTML report,
# diff, trend, merge and the Android native heap dump importer. Names start with export_.
foreach(t android formats diff_trend)
  if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/unit/test_export_${t}.c)
    ms_unit_test(export_unit_${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_export_${t}.c
      LIBS ms_analysis)
  endif()
endforeach()
# The formats test resolves an inlined frame of its own code: optimised, with debug info.
target_compile_options(export_unit_formats PRIVATE -O2 -g)
# Ground-truth programs: frame pointers and no inlining, so their stacks are exact.
ms_test_program(ex_trend SOURCES ${CMAKE_CURRENT_LIST_DIR}/programs/ex_trend.c
  FLAGS -O1 -g -fno-omit-frame-pointer -fno-inline LIBS dl)
# Runs of the real command. export_common.py holds their shared helpers (not a test).
foreach(t pprof android trend diff_merge browser)
  ms_integration_test(export_${t} ${CMAKE_CURRENT_LIST_DIR}/integration/export_${t}.py)
  set_tests_properties(export_${t} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
# libFuzzer target for the Android dump importer, the snapshot reader and the exporters,
# diff, trend and merge behind them, built with clang directly like the snapshot fuzzer,
# run for a bounded 15 s from the Android fixtures and the snapshot seeds.
set(MS_FUZZ_ANDROID ${MS_TEST_BIN}/fuzz/fuzz_export_android)
set(MS_FUZZ_ANDROID_SRCS ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_export_android.c
  ${PROJECT_SOURCE_DIR}/src/core/snapshot_read.c ${PROJECT_SOURCE_DIR}/src/core/fileio.c
  ${PROJECT_SOURCE_DIR}/src/core/snapshot_write.c)
foreach(f android_dump stack_agg collapsed pprof flamegraph html_report diff trend load merge
          symbolize report_json report_text report_model json_writer)
  list(APPEND MS_FUZZ_ANDROID_SRCS ${PROJECT_SOURCE_DIR}/src/analysis/${f}.c)
endforeach()
find_program(MS_CLANG NAMES clang clang-14)
if(MS_CLANG)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/export_fuzz_probe.c
    "int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n")
  execute_process(COMMAND ${MS_CLANG} -fsanitize=fuzzer ${CMAKE_CURRENT_BINARY_DIR}/export_fuzz_probe.c
    -o ${CMAKE_CURRENT_BINARY_DIR}/export_fuzz_probe RESULT_VARIABLE MS_EXPORT_FUZZ_PROBE
    OUTPUT_QUIET ERROR_QUIET)
endif()
if(MS_CLANG AND MS_EXPORT_FUZZ_PROBE EQUAL 0)
  add_custom_command(OUTPUT ${MS_FUZZ_ANDROID}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${MS_TEST_BIN}/fuzz
    COMMAND ${MS_CLANG} -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
      -I${PROJECT_SOURCE_DIR}/include -I${PROJECT_SOURCE_DIR}/src ${MS_FUZZ_ANDROID_SRCS}
      -ldw -lelf -lz -lstdc++ -lm -o ${MS_FUZZ_ANDROID}
    DEPENDS ${MS_FUZZ_ANDROID_SRCS} COMMENT "Building the Android dump fuzzer with clang" VERBATIM)
  add_custom_target(export_fuzz_android_bin ALL DEPENDS ${MS_FUZZ_ANDROID})
  add_test(NAME export_fuzz_android COMMAND sh -c
    "rm -rf \"$1\" && mkdir -p \"$1\" && cp \"$2\"/*.txt \"$3\"/*.seed \"$1\"/ && \"$0\" -max_total_time=15 -timeout=10 -rss_limit_mb=1024 -artifact_prefix=\"$1\"/ -print_final_stats=1 \"$1\""
    ${MS_FUZZ_ANDROID} ${MS_TEST_BIN}/fuzz/corpus-android ${PROJECT_SOURCE_DIR}/tests/data/android
    ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/snapshot)
  set_tests_properties(export_fuzz_android PROPERTIES TIMEOUT 120)
endif()
