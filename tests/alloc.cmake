# Programs the agent did not expect (prefix agent_alloc_): linked with Debian's jemalloc,
# tcmalloc and mimalloc (their own entry points mixed with malloc and free both ways),
# walking their own stacks with libunwind, loading libraries with RTLD_DEEPBIND (and
# php's extensions), and redis-server: in every mode, with the output and status of the
# run without the agent, no hang, one snapshot (integration/agent_alloc.py).
set(MS_FA_FLAGS -O2 -g)
foreach(a jemalloc tcmalloc mimalloc)
  string(TOUPPER ${a} A)
  find_library(MS_LIB_${A} NAMES ${a})
  if(MS_LIB_${A})
    ms_test_program(fa_${a} SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/fa_alloc.c
      FLAGS ${MS_FA_FLAGS} -DFA_${A} LIBS ${MS_LIB_${A}} Threads::Threads)
    add_dependencies(fa_${a} memsight_agent)
    ms_integration_test(agent_alloc_${a} ${CMAKE_CURRENT_SOURCE_DIR}/integration/agent_alloc.py ${a})
    set_tests_properties(agent_alloc_${a} PROPERTIES LABELS agent)
  else()
    message(WARNING "lib${a} not found (Debian: scripts/install-deps.sh): agent_alloc_${a} not built")
  endif()
endforeach()
find_library(MS_LIB_UNWIND_PLAIN NAMES unwind)
if(MS_LIB_UNWIND_PLAIN)
  ms_test_program(fa_unwind SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/fa_unwind.c
    FLAGS ${MS_FA_FLAGS} LIBS ${MS_LIB_UNWIND_PLAIN} Threads::Threads)
  ms_integration_test(agent_alloc_libunwind ${CMAKE_CURRENT_SOURCE_DIR}/integration/agent_alloc.py libunwind)
  set_tests_properties(agent_alloc_libunwind PROPERTIES LABELS agent)
endif()
add_library(db_lib SHARED ${CMAKE_CURRENT_SOURCE_DIR}/programs/db_lib.c)
target_compile_options(db_lib PRIVATE ${MS_FA_FLAGS})
set_target_properties(db_lib PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${MS_TEST_BIN}/programs)
ms_test_program(db_main SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/db_main.c
  FLAGS ${MS_FA_FLAGS} LIBS ${CMAKE_DL_LIBS})
add_dependencies(db_main db_lib memsight_agent)
foreach(c deepbind php redis)
  ms_integration_test(agent_alloc_${c} ${CMAKE_CURRENT_SOURCE_DIR}/integration/agent_alloc.py ${c})
  set_tests_properties(agent_alloc_${c} PROPERTIES LABELS agent)
endforeach()
