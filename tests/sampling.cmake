# Tests of the production-mode area: Poisson byte sampling, the control thread
# (dump on signal, periodic series, peak, triggers), guardrails and `memsight dump`.
# Names start with sampling_.
ms_unit_test(sampling_sampler SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_sampler.c
  ${PROJECT_SOURCE_DIR}/src/agent/record/sampler.c LIBS m Threads::Threads)
target_include_directories(sampling_sampler PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)

# Ground-truth programs (plain -O2, no frame pointers: the default unwinder must cope).
foreach(p sm_mix sm_peak sm_serve sm_forks sm_fork_walks sm_scale sm_api sm_single sm_noheader sm_boot)
  ms_test_program(${p} SOURCES ${CMAKE_CURRENT_LIST_DIR}/programs/${p}.c FLAGS -O2 -g
    LIBS Threads::Threads dl)
endforeach()

ms_integration_test(sampling_unbiased ${CMAKE_CURRENT_LIST_DIR}/integration/sampling_unbiased.py)
ms_integration_test(sampling_dump ${CMAKE_CURRENT_LIST_DIR}/integration/sampling_dump.py)
ms_integration_test(sampling_peak ${CMAKE_CURRENT_LIST_DIR}/integration/sampling_peak.py)
ms_integration_test(sampling_fork ${CMAKE_CURRENT_LIST_DIR}/integration/sampling_fork.py)
ms_integration_test(sampling_run ${CMAKE_CURRENT_LIST_DIR}/integration/sampling_run.py)
ms_integration_test(sampling_guard ${CMAKE_CURRENT_LIST_DIR}/integration/sampling_guard.py)
# No control thread unless something needs it; requests still answered
ms_integration_test(sampling_on_demand ${CMAKE_CURRENT_LIST_DIR}/integration/sampling_on_demand.py)
# Recorded blocks without header: glibc's chunks as asked, found by address
ms_integration_test(sampling_noheader ${CMAKE_CURRENT_LIST_DIR}/integration/sampling_noheader.py)
# fork() in the middle of the agent's walks of the loaded modules, made likely by a shim
# that slows every walk down
add_library(slow_walk SHARED ${CMAKE_CURRENT_LIST_DIR}/programs/slow_walk.c)
target_link_libraries(slow_walk PRIVATE dl)
set_target_properties(slow_walk PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${MS_TEST_BIN}/programs)
add_dependencies(sm_fork_walks slow_walk)
ms_integration_test(sampling_fork_walks ${CMAKE_CURRENT_LIST_DIR}/integration/sampling_fork_walks.py)
# Blocks of the agent's bootstrap arena freed in every mode: a shim preloaded before the
# agent allocates while the agent starts
add_library(boot_shim SHARED ${CMAKE_CURRENT_LIST_DIR}/programs/boot_shim.c)
target_link_libraries(boot_shim PRIVATE dl)
set_target_properties(boot_shim PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${MS_TEST_BIN}/programs)
add_dependencies(sm_boot boot_shim)
ms_integration_test(sampling_boot ${CMAKE_CURRENT_LIST_DIR}/integration/sampling_boot.py)
# The address table of recorded blocks on its own
ms_unit_test(sampling_addr_table SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_addr_table.c
  ${PROJECT_SOURCE_DIR}/src/agent/tables/addr_table.c LIBS pthread)
target_include_directories(sampling_addr_table PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
