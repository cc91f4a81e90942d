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

find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  foreach(t smaps top watch watch_java explain)
    ms_integration_test(proc_${t} ${Python3_EXECUTABLE}
                        ${CMAKE_CURRENT_SOURCE_DIR}/integration/proc_${t}.py)
  endforeach()
endif()
