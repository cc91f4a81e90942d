# Programs nobody here wrote, in miniature (prefix robust_): each runs without the agent
# and under the modes it concerns, and must end the same way with its snapshot
# (integration/robust_check.py). Tiny context stacks under the leak scan's stop signal,
# every thread-specific key left to the program.
set(MS_RB_CHECK ${CMAKE_CURRENT_SOURCE_DIR}/integration/robust_check.py)
set(MS_RB_MODES "full leak_check=exit unwind=fp unwind=libunwind sample=4096 sample=4096,leak_check=exit")

# a thread parked on a 4 KiB malloc'd makecontext stack when main() returns (LLVM's LSan
# guard-page.c, re-created), and a leak check while it is there: no byte below that
# stack may be written (the agent is linked -z now: no lazy binding in a handler)
ms_test_program(rb_ctx_stack SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/rb_ctx_stack.c
  FLAGS -O2 -g LIBS Threads::Threads)
ms_integration_test(robust_ctx_stack_exit ${MS_RB_CHECK} ${MS_RB_MODES} rb_ctx_stack)
ms_integration_test(robust_ctx_stack_watch ${MS_RB_CHECK} --status 0
  --stdout-has "below the stack: 0 bytes written" "full unwind=fp leak_check=exit" rb_ctx_stack watch)

# PTHREAD_KEYS_MAX keys for the program, none taken by the agent
ms_test_program(rb_keys SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/rb_keys.c
  FLAGS -O2 -g LIBS Threads::Threads)
ms_integration_test(robust_keys ${MS_RB_CHECK} --status 0 "full sample=4096 leak_check=exit" rb_keys)
set_tests_properties(robust_ctx_stack_exit robust_ctx_stack_watch robust_keys PROPERTIES LABELS robust)
