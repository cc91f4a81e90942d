# The agent and `memsight run` at the edges (prefix limits_): a main thread leaving through
# pthread_exit, a child forked from a thread, small address-space limits, bad option
# values, `memsight run` killed, descriptors the program can see, --watch at start-up.
set(MS_LIMITS_TESTS ${CMAKE_CURRENT_SOURCE_DIR})
ms_test_program(lm_main_exit SOURCES ${MS_LIMITS_TESTS}/programs/lm_main_exit.c FLAGS -O2 -g
  LIBS Threads::Threads)
ms_integration_test(limits_main_exit ${MS_LIMITS_TESTS}/integration/limits_main_exit.py)
set_tests_properties(limits_main_exit PROPERTIES LABELS limits)
ms_integration_test(limits_bad_options ${MS_LIMITS_TESTS}/integration/limits_bad_options.py)
set_tests_properties(limits_bad_options PROPERTIES LABELS limits)
ms_test_program(lm_wait SOURCES ${MS_LIMITS_TESTS}/programs/lm_wait.c FLAGS -O2 -g)
ms_integration_test(limits_orphan ${MS_LIMITS_TESTS}/integration/limits_orphan.py)
set_tests_properties(limits_orphan PROPERTIES LABELS limits)
ms_integration_test(limits_watch_start ${MS_LIMITS_TESTS}/integration/limits_watch_start.py)
set_tests_properties(limits_watch_start PROPERTIES LABELS limits)
ms_test_program(lm_vm SOURCES ${MS_LIMITS_TESTS}/programs/lm_vm.c FLAGS -O2 -g)
ms_integration_test(limits_ulimit ${MS_LIMITS_TESTS}/integration/limits_ulimit.py)
set_tests_properties(limits_ulimit PROPERTIES LABELS limits)
ms_test_program(lm_fds SOURCES ${MS_LIMITS_TESTS}/programs/lm_fds.c FLAGS -O2 -g LIBS Threads::Threads)
ms_integration_test(limits_fds ${MS_LIMITS_TESTS}/integration/limits_fds.py)
set_tests_properties(limits_fds PROPERTIES LABELS limits)
ms_test_program(lm_huge SOURCES ${MS_LIMITS_TESTS}/programs/lm_huge.c FLAGS -O2 -g)
ms_integration_test(limits_huge ${MS_LIMITS_TESTS}/integration/limits_huge.py)
set_tests_properties(limits_huge PROPERTIES LABELS limits)
