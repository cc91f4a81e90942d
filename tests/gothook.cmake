# memsight_start() and GOT hooks (prefix gothook_): the agent dlopen'ed by the program and
# started with memsight_start (GOT hooks, dlopen hook, blocks from before the start), and
# the agent linked into the program (-lmemsight) and started with memsight_start(NULL).
set(MS_GH_FLAGS -O1 -g -fno-omit-frame-pointer)
add_library(gh_lib SHARED ${CMAKE_CURRENT_SOURCE_DIR}/programs/gh_lib.c)
target_compile_options(gh_lib PRIVATE ${MS_GH_FLAGS})
set_target_properties(gh_lib PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${MS_TEST_BIN}/programs)
ms_test_program(gh_dlopen SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/gh_dlopen.c
  FLAGS ${MS_GH_FLAGS} LIBS ${CMAKE_DL_LIBS} Threads::Threads)
ms_test_program(gh_linked SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/gh_dlopen.c
  FLAGS ${MS_GH_FLAGS} -DGH_LINKED LIBS memsight_agent ${CMAKE_DL_LIBS} Threads::Threads)
target_include_directories(gh_linked PRIVATE ${PROJECT_SOURCE_DIR}/include)
add_dependencies(gh_dlopen gh_lib memsight_agent)
add_dependencies(gh_linked gh_lib)
ms_integration_test(gothook_dlopen ${CMAKE_CURRENT_SOURCE_DIR}/integration/gothook_check.py dlopen)
ms_integration_test(gothook_linked ${CMAKE_CURRENT_SOURCE_DIR}/integration/gothook_check.py linked)
ms_integration_test(gothook_prestart ${CMAKE_CURRENT_SOURCE_DIR}/integration/gothook_check.py prestart)
# the program's own allocator (linked before libc): pre-start blocks must go back to it
add_library(gh_alloc SHARED ${CMAKE_CURRENT_SOURCE_DIR}/programs/gh_alloc.c)
target_compile_options(gh_alloc PRIVATE ${MS_GH_FLAGS})
set_target_properties(gh_alloc PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${MS_TEST_BIN}/programs)
ms_test_program(gh_custom SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/gh_dlopen.c
  FLAGS ${MS_GH_FLAGS} -DGH_CUSTOM LIBS gh_alloc ${CMAKE_DL_LIBS} Threads::Threads)
add_dependencies(gh_custom gh_lib memsight_agent)
ms_integration_test(gothook_python ${CMAKE_CURRENT_SOURCE_DIR}/integration/gothook_check.py python)
# modules glibc loads itself (gconv by iconv_open, NSS by getpwnam) after the start, and _exit
ms_test_program(gh_modules SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/gh_modules.c
  FLAGS ${MS_GH_FLAGS} LIBS ${CMAKE_DL_LIBS} -Wl,-z,now -Wl,-z,relro)
add_dependencies(gh_modules memsight_agent)
ms_integration_test(gothook_modules ${CMAKE_CURRENT_SOURCE_DIR}/integration/gothook_check.py modules)
