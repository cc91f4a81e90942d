# The agent's tests (prefix agent_): ground-truth programs built with -O2 and with
# frame pointers, run under libmemsight.so with every unwinder; real programs under the
# agent with unchanged output and exit status.
set(MS_AGENT_TESTS ${CMAKE_CURRENT_SOURCE_DIR})
foreach(p heap deep mmap threads cxx samesp walkdiff coro)
  if(p STREQUAL "cxx")
    set(src ${MS_AGENT_TESTS}/programs/gt_cxx.cpp)
  else()
    set(src ${MS_AGENT_TESTS}/programs/gt_${p}.c)
  endif()
  ms_test_program(gt_${p}_o2 SOURCES ${src} FLAGS -O2 -g -fomit-frame-pointer LIBS Threads::Threads)
  ms_test_program(gt_${p}_fp SOURCES ${src} FLAGS -O2 -g -fno-omit-frame-pointer LIBS Threads::Threads)
  ms_integration_test(agent_gt_${p}_o2 ${MS_AGENT_TESTS}/integration/agent_groundtruth.py gt_${p}_o2)
  ms_integration_test(agent_gt_${p}_fp ${MS_AGENT_TESTS}/integration/agent_groundtruth.py gt_${p}_fp)
  ms_integration_test(agent_gt_${p}_o2_libunwind ${MS_AGENT_TESTS}/integration/agent_groundtruth.py gt_${p}_o2 unwind=libunwind)
  set_tests_properties(agent_gt_${p}_o2 agent_gt_${p}_fp agent_gt_${p}_o2_libunwind PROPERTIES LABELS agent)
  # The frame-pointer unwinder on the frame-pointer build; not for C++, whose operator
  # new lives in Debian's libstdc++, built without frame pointers.
  if(NOT p STREQUAL "cxx")
    ms_integration_test(agent_gt_${p}_fp_fpunwind ${MS_AGENT_TESTS}/integration/agent_groundtruth.py gt_${p}_fp unwind=fp)
    set_tests_properties(agent_gt_${p}_fp_fpunwind PROPERTIES LABELS agent)
  endif()
endforeach()

# One stack for five threads (max_depth=1): the heap counters' shard 0, which the main
# thread adds to without atomics, beside the other threads' shards; the sums exact.
ms_integration_test(agent_gt_threads_shared ${MS_AGENT_TESTS}/integration/agent_groundtruth.py gt_threads_o2 max_depth=1)
set_tests_properties(agent_gt_threads_shared PROPERTIES LABELS agent)
# Without a block list (blocks=0) the live counters per stack (frees derived from the
# live table) come from a pass of their own: the same exact counts.
ms_integration_test(agent_gt_heap_noblocks ${MS_AGENT_TESTS}/integration/agent_groundtruth.py gt_heap_o2 blocks=0)
set_tests_properties(agent_gt_heap_noblocks PROPERTIES LABELS agent)
# Without follow_exec a program started by exec runs without the agent, under whatever
# name and path LD_PRELOAD gave it (a renamed copy included); with follow_exec=1 it stays.
ms_integration_test(agent_exec_strip ${MS_AGENT_TESTS}/integration/agent_exec_strip.py)
set_tests_properties(agent_exec_strip PROPERTIES LABELS agent)

# Real programs under `memsight run`: unchanged output and status, complete snapshots.
foreach(p fork exec threads64 dlopen exit_thread ctor ucontext)
  ms_test_program(rp_${p} SOURCES ${MS_AGENT_TESTS}/programs/rp_${p}.c FLAGS -O2 -g
    LIBS Threads::Threads ${CMAKE_DL_LIBS})
endforeach()
foreach(c python sqlite xz gcc git fork exec exec_follow threads64 dlopen exit_thread ctor
    full_tables ucontext)
  ms_integration_test(agent_real_${c} ${MS_AGENT_TESTS}/integration/agent_real.py ${c})
  set_tests_properties(agent_real_${c} PROPERTIES LABELS agent)
endforeach()

# The allocation-free snapshot writer, read back through the tools' reader.
ms_unit_test(agent_unit_snapshot_write SOURCES ${MS_AGENT_TESTS}/unit/test_snapshot_write.c LIBS ms_core)
set_tests_properties(agent_unit_snapshot_write PROPERTIES LABELS agent)
# Every option's refusal fits the buffers the agent and the commands give it, whole.
ms_unit_test(agent_unit_options SOURCES ${MS_AGENT_TESTS}/unit/test_agent_options.c LIBS ms_core)
target_include_directories(agent_unit_options PRIVATE ${PROJECT_SOURCE_DIR}/src)
set_tests_properties(agent_unit_options PROPERTIES LABELS agent)
# The vDSO's clock_gettime, found by the agent's own ELF reading (vdso.c).
ms_unit_test(agent_unit_vdso SOURCES ${MS_AGENT_TESTS}/unit/test_vdso.c
  ${PROJECT_SOURCE_DIR}/src/agent/platform/vdso.c ${PROJECT_SOURCE_DIR}/src/agent/platform/elf_mod.c LIBS ${CMAKE_DL_LIBS})
target_include_directories(agent_unit_vdso PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
set_tests_properties(agent_unit_vdso PROPERTIES LABELS agent)
# The live table on its own: in-use bytes cleared on free, entries reused, read back.
ms_unit_test(agent_unit_live SOURCES ${MS_AGENT_TESTS}/unit/test_live.c
  ${PROJECT_SOURCE_DIR}/src/agent/tables/live.c ${PROJECT_SOURCE_DIR}/src/agent/tables/chunks.c)
target_include_directories(agent_unit_live PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
set_tests_properties(agent_unit_live PROPERTIES LABELS agent)

# The agent's layering (src/agent/LAYERS, docs/agent.md): no file includes a header of a
# folder above its own, no .c file at the top of src/agent, at most 15 in a folder.
ms_integration_test(agent_layers ${MS_AGENT_TESTS}/integration/agent_layers.py)
set_tests_properties(agent_layers PROPERTIES LABELS agent)
