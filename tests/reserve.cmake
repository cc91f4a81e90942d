# Reserved address space (kind reserved, prefix reserve_): PROT_NONE reservations, pieces
# committed by mprotect and by mmap MAP_FIXED, released again, unmapped; the agent's raw
# snapshot and the reports agree with the program's ground truth; a real JVM.
foreach(v o2 fp)
  if(v STREQUAL "o2")
    set(fl -O2 -g -fomit-frame-pointer)
  else()
    set(fl -O2 -g -fno-omit-frame-pointer)
  endif()
  ms_test_program(rv_reserve_${v} SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/rv_reserve.c FLAGS ${fl} LIBS Threads::Threads)
  # the agent's own ground-truth check: per-stack counters, BLKS and the JSON report
  ms_integration_test(reserve_gt_${v} ${CMAKE_CURRENT_SOURCE_DIR}/integration/agent_groundtruth.py rv_reserve_${v})
  # totals, ordering, text report, exit summary and exporters under `memsight run`
  ms_integration_test(reserve_run_${v} ${CMAKE_CURRENT_SOURCE_DIR}/integration/reserve_check.py program rv_reserve_${v})
endforeach()
find_program(MS_RESERVE_JAVA java)
if(MS_RESERVE_JAVA)
  ms_integration_test(reserve_java ${CMAKE_CURRENT_SOURCE_DIR}/integration/reserve_check.py java)
endif()
