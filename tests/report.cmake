# Tests of the report area: snapshot reader, symbolizer, `memsight report` and `memsight run`.
# Names start with report_.
ms_unit_test(report_snapshot_read SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_snapshot_read.c
  LIBS ms_core)
