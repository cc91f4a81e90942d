# memsight attach / detach (prefix attach_): a multi-threaded ground-truth program driven
# through pipes, attached while it runs, its blocks from before the attach freed and
# reallocated afterwards; python3 and sqlite3 attached in the middle of their work;
# refusals; and memsight killed at every step of an attach.
ms_test_program(at_target SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/at_target.c
  FLAGS -O1 -g -fno-omit-frame-pointer LIBS Threads::Threads)
add_dependencies(at_target memsight_agent)
foreach(case threads kill signals refuse python sqlite)
  ms_integration_test(attach_${case} ${CMAKE_CURRENT_SOURCE_DIR}/integration/attach_check.py ${case})
endforeach()
# what a careless user meets (attach_live_): requests answered at once with the reason,
# options that cannot work refused first, one mode per agent, the agent's own errors
ms_test_program(at_fork SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/at_fork.c FLAGS -O1 -g)
foreach(case sampled options mode full output messages children reports)
  ms_integration_test(attach_live_${case} ${CMAKE_CURRENT_SOURCE_DIR}/integration/attach_live.py ${case})
endforeach()
