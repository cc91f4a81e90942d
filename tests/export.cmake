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
foreach(t pprof android trend browser)
  ms_integration_test(export_${t} ${CMAKE_CURRENT_LIST_DIR}/integration/export_${t}.py)
  set_tests_properties(export_${t} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
