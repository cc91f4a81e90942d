# Tests of the HPROF analysis area: dominator tree, retained sizes, paths to GC roots,
# diff of dumps. Names start with hprof_an_.
if(TARGET ms_hprof)
  ms_unit_test(hprof_an_domtree SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_domtree.c LIBS ms_hprof)
endif()
