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

# the unwinders' stack reads: overflow-safe bounds, the frame-record walk fed random
# frames (unit), and a program whose frame pointer is 0xfffffffffffffff0 (and near it)
# when it calls malloc, under every unwinder
ms_unit_test(robust_unit_unwind_walk SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_unwind_walk.c)
target_include_directories(robust_unit_unwind_walk PRIVATE ${PROJECT_SOURCE_DIR}/src)
ms_test_program(rb_bad_fp SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/rb_bad_fp.c FLAGS -O2 -g)
ms_integration_test(robust_bad_fp ${MS_RB_CHECK} ${MS_RB_MODES} rb_bad_fp)
string(REPEAT "configuration" 8 MS_RB_TEXT)
ms_integration_test(robust_bad_fp_env ${MS_RB_CHECK} --frames-known --env RB_TEXT=${MS_RB_TEXT}
  "full unwind=fp unwind=libunwind" rb_bad_fp env)
set_tests_properties(robust_unit_unwind_walk robust_bad_fp robust_bad_fp_env PROPERTIES LABELS robust)

# a program started as ./prog is named by its absolute path and symbolized
ms_integration_test(robust_relpath ${CMAKE_CURRENT_SOURCE_DIR}/integration/robust_relpath.py gt_heap_fp)
set_tests_properties(robust_relpath PROPERTIES LABELS robust)

# children a sandbox keeps from writing their exit snapshot: said once for the run
ms_test_program(rb_sandbox SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/rb_sandbox.c FLAGS -O2 -g)
ms_integration_test(robust_sandbox ${CMAKE_CURRENT_SOURCE_DIR}/integration/robust_sandbox.py)
set_tests_properties(robust_sandbox PROPERTIES LABELS robust)
