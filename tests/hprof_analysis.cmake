# Tests of the HPROF analysis area: dominator tree, retained sizes, paths to GC roots,
# diff of dumps. Names start with hprof_an_.
if(NOT TARGET ms_hprof)
  return()
endif()
ms_unit_test(hprof_an_domtree SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_domtree.c LIBS ms_hprof)
# Driver used by the integration tests and the benchmark: exports the graph as the
# dominator computation sees it and runs each analysis alone.
ms_test_program(hprof_an_tool SOURCES ${CMAKE_CURRENT_LIST_DIR}/programs/hprof_an_tool.c LIBS ms_hprof)
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  # The cross-check needs networkx: Debian's python3-networkx serves the system
  # interpreter, which may not be the first python3 on PATH.
  find_program(MS_SYSTEM_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
  if(NOT MS_SYSTEM_PYTHON)
    set(MS_SYSTEM_PYTHON ${Python3_EXECUTABLE})
  endif()
  ms_integration_test(hprof_an_reference ${MS_SYSTEM_PYTHON}
    ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_an_reference.py)
  ms_integration_test(hprof_an_synthetic ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_an_synthetic.py)
  ms_integration_test(hprof_an_leaks ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_an_leaks.py)
  ms_integration_test(hprof_an_android ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_an_android.py)
  ms_integration_test(hprof_an_koom ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_an_koom.py)
  # strip and convert, checked against Debian's hprof-conv and the graph export
  ms_integration_test(hprof_rewrite ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_rewrite.py)
  find_program(MS_JCMD jcmd)
  find_program(MS_JAVAC javac)
  if(MS_JCMD AND MS_JAVAC)
    ms_integration_test(hprof_an_java_truth ${Python3_EXECUTABLE}
      ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_an_java_truth.py)
    ms_integration_test(hprof_an_java_leaks ${Python3_EXECUTABLE}
      ${CMAKE_CURRENT_LIST_DIR}/integration/hprof_an_java_leaks.py)
  endif()
  foreach(t hprof_an_reference hprof_an_synthetic hprof_an_leaks hprof_an_android hprof_an_koom hprof_an_java_truth hprof_an_java_leaks)
    if(TEST ${t})
      set_tests_properties(${t} PROPERTIES DEPENDS hprof_an_domtree)
    endif()
  endforeach()
endif()
