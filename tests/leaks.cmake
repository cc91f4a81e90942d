# Tests of the leak-scan area: the reachability core on synthetic images, ground-truth
# programs under the agent (and under valgrind for comparison). Names start with leaks_.
ms_unit_test(leaks_unit_mark SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_leak_mark.c
  ${PROJECT_SOURCE_DIR}/src/agent/leak/leak_mark.c)
target_include_directories(leaks_unit_mark PRIVATE ${PROJECT_SOURCE_DIR}/include
  ${PROJECT_SOURCE_DIR}/src)
ms_unit_test(leaks_unit_stop SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_leak_stop.c
  ${PROJECT_SOURCE_DIR}/src/agent/leak/leak_stop.c ${PROJECT_SOURCE_DIR}/src/agent/platform/sig_resume.c
  ${PROJECT_SOURCE_DIR}/src/agent/platform/elf_mod.c
  ${MS_AGENT_PLATFORM_SOURCES} LIBS Threads::Threads)
target_include_directories(leaks_unit_stop PRIVATE ${PROJECT_SOURCE_DIR}/include
  ${PROJECT_SOURCE_DIR}/src)
ms_unit_test(leaks_unit_maps SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_leak_maps.c
  ${PROJECT_SOURCE_DIR}/src/agent/leak/leak_maps.c)
target_include_directories(leaks_unit_maps PRIVATE ${PROJECT_SOURCE_DIR}/include
  ${PROJECT_SOURCE_DIR}/src)

# Ground-truth programs: each prints what it expects (EXPECT, VALGRIND, RECORD lines).
# Built with -O2 (no frame pointers) like ordinary release code.
foreach(p stack register global tls thread_stack cycle tree interior freed mmap threads64 serve
    unmapped stale thread_start fatal)
  ms_test_program(lk_${p} SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/lk_${p}.c
    FLAGS -O2 -g LIBS Threads::Threads)
endforeach()

# Each case: the mid-run scan through memsight_leak_check() (api), and the same program
# under valgrind --leak-check=full (valgrind). The exit scan for the cases whose answer
# does not depend on live frames.
set(LK_GT ${CMAKE_CURRENT_SOURCE_DIR}/integration/leaks_ground_truth.py)
foreach(p stack register global tls thread_stack cycle tree interior freed mmap stale
    thread_start)
  ms_integration_test(leaks_api_${p} ${LK_GT} lk_${p} api)
  ms_integration_test(leaks_valgrind_${p} ${LK_GT} lk_${p} valgrind)
endforeach()
foreach(p global cycle tree interior freed)
  ms_integration_test(leaks_exit_${p} ${LK_GT} lk_${p} exit)
endforeach()
ms_integration_test(leaks_api_threads64 ${LK_GT} lk_threads64 api)
ms_integration_test(leaks_api_unmapped ${LK_GT} lk_unmapped api)
ms_integration_test(leaks_cli ${CMAKE_CURRENT_SOURCE_DIR}/integration/leaks_cli.sh)

# Valgrind as the oracle: each lv_* program runs to its end under valgrind (freeres off)
# and under memsight with the exit scan; the four classes must agree in bytes and blocks.
add_library(lv_ctorlib SHARED ${CMAKE_CURRENT_SOURCE_DIR}/programs/lv_ctorlib.c)
set_target_properties(lv_ctorlib PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${MS_TEST_BIN}/programs)
foreach(p static tiny thread_arg thread_ret ctor mix)
  ms_test_program(lv_${p} SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/lv_${p}.c
    FLAGS -O2 -g LIBS Threads::Threads)
endforeach()
target_link_libraries(lv_ctor PRIVATE lv_ctorlib)
# the dynamic linker's blocks of dlopen (docs/leaks.md: roots for memsight)
ms_test_program(lv_dlopen SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/lv_dlopen.c
  FLAGS -O2 -g LIBS ${CMAKE_DL_LIBS})
ms_integration_test(leaks_vs_valgrind_dlopen
  ${CMAKE_CURRENT_SOURCE_DIR}/integration/leaks_vs_valgrind.py lv_dlopen)
ms_test_program(lv_cxx SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/lv_cxx.cpp FLAGS -O0 -g)
foreach(p static tiny thread_arg thread_ret ctor cxx mix)
  ms_integration_test(leaks_vs_valgrind_${p}
    ${CMAKE_CURRENT_SOURCE_DIR}/integration/leaks_vs_valgrind.py lv_${p})
endforeach()
# valgrind's interior-pointer heuristics (std::string's rep, a length prefix, new[]'s
# count, a second base class): at valgrind's default (all of them) and with none
ms_test_program(lv_heur SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/lv_heur.cpp FLAGS -O0 -g)
ms_integration_test(leaks_vs_valgrind_heur
  ${CMAKE_CURRENT_SOURCE_DIR}/integration/leaks_vs_valgrind.py lv_heur)
ms_integration_test(leaks_vs_valgrind_heur_none
  ${CMAKE_CURRENT_SOURCE_DIR}/integration/leaks_vs_valgrind.py --heuristics=none lv_heur)
ms_integration_test(leaks_vs_valgrind_heur_some
  ${CMAKE_CURRENT_SOURCE_DIR}/integration/leaks_vs_valgrind.py
  --heuristics=stdstring,multipleinheritance lv_heur)
# Real programs: Python's start-up and exit (locale, codecs, its own allocator's
# arenas), and sort (stdio, locale): the same classes as valgrind's.
ms_integration_test(leaks_vs_valgrind_python3
  ${CMAKE_CURRENT_SOURCE_DIR}/integration/leaks_vs_valgrind.py /usr/bin/python3 -c pass)
# SQLite's allocator keeps each block's size in its first 8 bytes (length64): a database
# left open at exit, at valgrind's default heuristics and with none
find_path(MS_SQLITE3_INCLUDE sqlite3.h)
find_library(MS_SQLITE3_LIB sqlite3)
if(MS_SQLITE3_INCLUDE AND MS_SQLITE3_LIB)
  ms_test_program(lv_sqlite SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/lv_sqlite.c
    FLAGS -O2 -g LIBS ${MS_SQLITE3_LIB})
  ms_integration_test(leaks_vs_valgrind_sqlite3
    ${CMAKE_CURRENT_SOURCE_DIR}/integration/leaks_vs_valgrind.py lv_sqlite)
  ms_integration_test(leaks_vs_valgrind_sqlite3_none
    ${CMAKE_CURRENT_SOURCE_DIR}/integration/leaks_vs_valgrind.py --heuristics=none lv_sqlite)
endif()
ms_integration_test(leaks_vs_valgrind_sort
  ${CMAKE_CURRENT_SOURCE_DIR}/integration/leaks_vs_valgrind.py /usr/bin/sort
  ${PROJECT_SOURCE_DIR}/README.md)

# Requests reach the agent without cutting the program's sleep short.
ms_test_program(rq_sleep SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/rq_sleep.c FLAGS -O2 -g)
ms_integration_test(leaks_requests ${CMAKE_CURRENT_SOURCE_DIR}/integration/leaks_requests.py)

# fatal_snapshot=1: the last snapshot, with the leak scan, from a SIGSEGV or SIGABRT.
ms_integration_test(leaks_fatal ${CMAKE_CURRENT_SOURCE_DIR}/integration/leaks_fatal.py)
# Only the C library's sleep and poll calls are resumed after an agent signal: a stale
# restart block (a poll restarted by SIGSTOP/SIGCONT) is never replayed into epoll_wait.
ms_test_program(rq_stale SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/rq_stale.c FLAGS -O2 -g LIBS pthread)
add_test(NAME leaks_requests_stale COMMAND sh -c "mkdir -p \"$1\" && exec env LD_PRELOAD=\"$2\" MEMSIGHT_OPTIONS=out=\"$1\" \"$3\""
  rq_stale ${CMAKE_CURRENT_BINARY_DIR}/rq_stale_out ${PROJECT_BINARY_DIR}/lib/libmemsight.so
  ${MS_TEST_BIN}/programs/rq_stale)
set_tests_properties(leaks_requests_stale PROPERTIES TIMEOUT 120)
# memsight leaks when the scan's child dies before it sends its result: an answer at once,
# with the cause, instead of a wait until the timeout
ms_test_program(lk_many SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/lk_many.c FLAGS -O2 -g)
ms_integration_test(leaks_child_dies ${CMAKE_CURRENT_SOURCE_DIR}/integration/leaks_child_dies.py)
# the heuristics' option everywhere it is given, and LeakSanitizer's rule (interior)
ms_integration_test(leaks_heuristics ${CMAKE_CURRENT_SOURCE_DIR}/integration/leaks_heuristics.sh)
