# Agent-only builds (cross and other C libraries, docs/platforms.md): the agent's
# ground-truth and leak programs the platform tests (tests/platforms.cmake) run on that
# platform, built into tests/programs as in the full build.
set(MS_TEST_BIN ${PROJECT_BINARY_DIR}/tests)
# valgrind's client-request header (lk_common.h) from the host's valgrind package; it is
# not on a cross or musl compiler's include path, and it has every architecture's form
set(MS_PL_INC ${PROJECT_BINARY_DIR}/platform-include)
file(MAKE_DIRECTORY ${MS_PL_INC})
if(EXISTS /usr/include/valgrind AND NOT EXISTS ${MS_PL_INC}/valgrind)
  file(CREATE_LINK /usr/include/valgrind ${MS_PL_INC}/valgrind SYMBOLIC)
endif()
function(ms_platform_program name src)
  add_executable(${name} ${PROJECT_SOURCE_DIR}/tests/programs/${src})
  target_compile_options(${name} PRIVATE ${ARGN})
  target_include_directories(${name} PRIVATE ${MS_PL_INC})
  target_link_libraries(${name} PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MS_TEST_BIN}/programs)
endfunction()
foreach(p heap deep mmap threads)
  ms_platform_program(gt_${p}_o2 gt_${p}.c -O2 -g -fomit-frame-pointer)
  ms_platform_program(gt_${p}_fp gt_${p}.c -O2 -g -fno-omit-frame-pointer)
endforeach()
foreach(p stack register global tls thread_stack tree interior threads64)
  ms_platform_program(lk_${p} lk_${p}.c -O2 -g)
endforeach()
# GOT hooks and memsight_start() (tests/gothook.cmake): the agent dlopen'ed and started,
# linked in, with the program's own allocator, and modules the C library loads itself.
# glibc only: musl's loader refuses to dlopen the agent (its initial-exec TLS), and
# gh_alloc and gh_modules use glibc's own functions and modules (docs/platforms.md).
if(MS_AGENT_LIBC STREQUAL "glibc")
  set(MS_GH_FLAGS -O1 -g -fno-omit-frame-pointer)
  foreach(l gh_lib gh_alloc)
    add_library(${l} SHARED ${PROJECT_SOURCE_DIR}/tests/programs/${l}.c)
    target_compile_options(${l} PRIVATE ${MS_GH_FLAGS})
    set_target_properties(${l} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${MS_TEST_BIN}/programs)
  endforeach()
  ms_platform_program(gh_dlopen gh_dlopen.c ${MS_GH_FLAGS})
  ms_platform_program(gh_linked gh_dlopen.c ${MS_GH_FLAGS} -DGH_LINKED)
  target_link_libraries(gh_linked PRIVATE memsight_agent)
  target_include_directories(gh_linked PRIVATE ${PROJECT_SOURCE_DIR}/include)
  ms_platform_program(gh_custom gh_dlopen.c ${MS_GH_FLAGS} -DGH_CUSTOM)
  target_link_libraries(gh_custom PRIVATE gh_alloc)
  ms_platform_program(gh_modules gh_modules.c ${MS_GH_FLAGS})
  target_link_options(gh_modules PRIVATE -Wl,-z,now -Wl,-z,relro)
endif()
# sampled mode (tests/sampling.cmake): blocks far above the sampling rate, known exactly
ms_platform_program(sm_peak sm_peak.c -O2 -g)
if(MS_AGENT_ARCH STREQUAL "aarch64")
  # return addresses signed with pointer authentication (qemu-user's CPU has it)
  ms_platform_program(gt_heap_pac gt_heap.c -O2 -g -fomit-frame-pointer -mbranch-protection=pac-ret)
  ms_platform_program(gt_deep_pacfp gt_deep.c -O2 -g -fno-omit-frame-pointer -mbranch-protection=pac-ret)
  ms_platform_program(lk_tagged lk_tagged.c -O2 -g)
  # CPython: Debian's libpython3.11:arm64 behind its own one-line main (py_main.c)
  set(MS_PYLIB /usr/lib/aarch64-linux-gnu/libpython3.11.so.1.0)
  if(EXISTS ${MS_PYLIB})
    add_executable(python3_arm64 ${PROJECT_SOURCE_DIR}/tests/programs/py_main.c)
    # libpython's own dependencies are found at link time among the multiarch libraries
    target_link_libraries(python3_arm64 PRIVATE ${MS_PYLIB}
      -Wl,-rpath-link,/usr/lib/aarch64-linux-gnu:/lib/aarch64-linux-gnu)
    set_target_properties(python3_arm64 PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MS_TEST_BIN}/programs)
  endif()
endif()
