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
ms_test_program(ex_sites SOURCES ${CMAKE_CURRENT_LIST_DIR}/programs/ex_sites.c
  FLAGS -O1 -g -fno-omit-frame-pointer -fno-inline)
# Runs of the real command. export_common.py holds their shared helpers (not a test).
foreach(t pprof android trend diff_merge browser sites massif)
  ms_integration_test(export_${t} ${CMAKE_CURRENT_LIST_DIR}/integration/export_${t}.py)
  set_tests_properties(export_${t} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
# libFuzzer target for the Android dump importer, the snapshot reader and the exporters,
# diff, trend and merge behind them, built with clang directly like the snapshot fuzzer,
# run for a bounded 15 s from the Android fixtures and the snapshot seeds.
set(MS_FUZZ_ANDROID ${MS_TEST_BIN}/fuzz/fuzz_export_android)
set(MS_FUZZ_ANDROID_SRCS ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_export_android.c
  ${PROJECT_SOURCE_DIR}/src/core/snapshot_read.c ${PROJECT_SOURCE_DIR}/src/core/fileio.c
  ${PROJECT_SOURCE_DIR}/src/core/safe_file.c
  ${PROJECT_SOURCE_DIR}/src/core/snapshot_write.c ${PROJECT_SOURCE_DIR}/src/core/labels.c
  ${PROJECT_SOURCE_DIR}/src/core/crc32.c)
foreach(f android_dump stack_agg collapsed pprof protobuf flamegraph html_report diff trend load merge
          symbolize report_json report_text report_model json_writer sites
          threads_report threads_html)
  list(APPEND MS_FUZZ_ANDROID_SRCS ${PROJECT_SOURCE_DIR}/src/analysis/${f}.c)
endforeach()
if(MS_CLANG_FUZZER)
  ms_clang_fuzzer(export_fuzz_android_bin ${MS_FUZZ_ANDROID} COMMENT "Building the Android dump fuzzer with clang"
    SOURCES ${MS_FUZZ_ANDROID_SRCS} LIBS -ldw -lelf -lz -lstdc++ -lm)
  add_test(NAME export_fuzz_android COMMAND sh -c
    "rm -rf \"$1\" && mkdir -p \"$1\" && cp \"$2\"/*.txt \"$3\"/*.seed \"$1\"/ && \"$0\" -max_total_time=15 -timeout=10 -rss_limit_mb=1024 -artifact_prefix=\"$1\"/ -print_final_stats=1 \"$1\""
    ${MS_FUZZ_ANDROID} ${MS_TEST_BIN}/fuzz/corpus-android ${PROJECT_SOURCE_DIR}/tests/data/android
    ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/snapshot)
  set_tests_properties(export_fuzz_android PROPERTIES TIMEOUT 120)
endif()
