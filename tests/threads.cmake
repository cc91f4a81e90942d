# Thread lives (prefix threads_): threads leaked (ended, never joined nor detached),
# alive and counted, in snapshots, reports and `memsight watch` (docs/thread-leaks.md).
set(MS_THREADS_TESTS ${CMAKE_CURRENT_SOURCE_DIR})
ms_test_program(th_leaks SOURCES ${MS_THREADS_TESTS}/programs/th_leaks.c FLAGS -O2 -g
  LIBS Threads::Threads ${CMAKE_DL_LIBS})
ms_integration_test(threads_truth ${MS_THREADS_TESTS}/integration/threads_truth.py)
set_tests_properties(threads_truth PROPERTIES LABELS threads)
ms_integration_test(threads_watch ${MS_THREADS_TESTS}/integration/threads_watch.py)
set_tests_properties(threads_watch PROPERTIES LABELS threads)
ms_integration_test(threads_python ${MS_THREADS_TESTS}/integration/threads_python.py)
set_tests_properties(threads_python PROPERTIES LABELS threads)
