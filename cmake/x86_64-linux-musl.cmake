# The agent against musl (Debian's musl-tools):
#   cmake -S . -B build-musl -DCMAKE_TOOLCHAIN_FILE=cmake/x86_64-linux-musl.cmake
# musl-gcc compiles with musl's headers and links musl's libc; Debian's libunwind, libdw
# and zlib are built for glibc, so none is looked for: the agent alone, with frame
# pointers as the unwinder's fallback (docs/platforms.md).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER musl-gcc)
set(MEMSIGHT_AGENT_ONLY ON CACHE BOOL "musl: the agent and its platform test programs" FORCE)
set(ENV{PKG_CONFIG_LIBDIR} /nonexistent)
set(ENV{PKG_CONFIG_PATH} "")
# musl-gcc searches musl's headers alone; the kernel's UAPI headers (linux/futex.h), the
# same for every C library, are given through a directory of links to Debian's
set(MS_MUSL_KINC ${CMAKE_BINARY_DIR}/musl-kernel-include)
file(MAKE_DIRECTORY ${MS_MUSL_KINC})
foreach(d linux asm-generic x86_64-linux-gnu/asm)
  get_filename_component(n ${d} NAME)
  if(EXISTS /usr/include/${d} AND NOT EXISTS ${MS_MUSL_KINC}/${n})
    file(CREATE_LINK /usr/include/${d} ${MS_MUSL_KINC}/${n} SYMBOLIC)
  endif()
endforeach()
set(CMAKE_C_FLAGS_INIT "-isystem ${MS_MUSL_KINC}")
# Debian's musl-gcc links without .eh_frame_hdr, the table the cached CFI unwinder
# searches (musl systems' own compilers, Alpine's, do pass it): asked for here, as the
# programs of a musl system have it. A module without one is walked with frame pointers.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,--eh-frame-hdr")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,--eh-frame-hdr")
