# Tests of the exports area: pprof, collapsed stacks, flame graphs, the HTML report,
# diff, trend, merge and the Android native heap dump importer. Names start with export_.
foreach(t android formats diff_trend)
  if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/unit/test_export_${t}.c)
    ms_unit_test(export_${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_export_${t}.c
      LIBS ms_analysis)
  endif()
endforeach()
# Ground-truth programs: frame pointers and no inlining, so their stacks are exact.
ms_test_program(ex_trend SOURCES ${CMAKE_CURRENT_LIST_DIR}/programs/ex_trend.c
  FLAGS -O1 -g -fno-omit-frame-pointer -fno-inline LIBS dl)
