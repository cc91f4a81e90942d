# Guard pages (guard=RATE): gd_errors makes one memory error per case, caught at the bad
# access with the right kind, offset and stacks; gd_churn and real programs run unchanged.
ms_test_program(gd_errors SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/gd_errors.c
  FLAGS -O2 -g -fomit-frame-pointer -fno-optimize-sibling-calls LIBS Threads::Threads)
ms_test_program(gd_churn SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/gd_churn.c FLAGS -O2 -g)
ms_test_program(gd_maps SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/gd_maps.c FLAGS -O2 -g)
ms_test_program(gd_first SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/gd_first.c FLAGS -O2 -g
  LIBS Threads::Threads)
foreach(c uaf_read uaf_write overflow underflow double_free invalid_free realloc_uaf
    memalign_overflow thread_uaf fork_uaf own_handler_uaf chain leaks maps uaf_read_sampled overflow_sampled
    double_free_sampled invalid_free_sampled realloc_uaf_sampled churn python sort
    uaf_beside invalid_free_before slack_free slack_realloc slack_under strncpy_overflow
    slack_snapshot recover first_2 first_10 first_100 budget)
  ms_integration_test(guard_${c} ${CMAKE_CURRENT_SOURCE_DIR}/integration/guard_check.py ${c})
  set_tests_properties(guard_${c} PROPERTIES LABELS agent)
endforeach()
