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
