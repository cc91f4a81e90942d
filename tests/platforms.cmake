# The agent on other platforms (docs/platforms.md), names start with platform_: an
# AArch64 tree cross-built with gcc-aarch64-linux-gnu whose programs run under
# qemu-user, and a musl tree built with musl-gcc. Each tree is configured and built by a
# setup test (a fixture); the checks run that tree's programs with that tree's agent and
# read the snapshots with this build's memsight (x86-64, glibc), symbolized from the
# target's files. Under qemu only what exercises the architecture runs: unwinding with
# and without frame pointers and with signed return addresses (each unwinder), leak-scan
# roots and thread stopping, pointer tags, GOT hooks, sampled mode, and a few runs of
# the target's own memsight command.
find_program(MS_QEMU_AARCH64 qemu-aarch64-static)
find_program(MS_AARCH64_GCC aarch64-linux-gnu-gcc)
find_program(MS_MUSL_GCC musl-gcc)
# The AArch64 C library the programs run with: Debian's multiarch libc6:arm64 when it is
# installed (with libpython3.11:arm64, scripts/install-deps.sh), else the cross
# toolchain's libc6-arm64-cross through qemu's -L prefix (never a mix of the two: the
# loader of one with the libc of the other does not work)
if(EXISTS /lib/ld-linux-aarch64.so.1)
  set(MS_AARCH64_RUNNER "${MS_QEMU_AARCH64}")
  set(MS_AARCH64_ROOT "")
else()
  set(MS_AARCH64_ROOT /usr/aarch64-linux-gnu)
  set(MS_AARCH64_RUNNER "${MS_QEMU_AARCH64} -L ${MS_AARCH64_ROOT}")
endif()

# ms_platform_test(NAME PLATFORM SCRIPT ARGS...): SCRIPT with PLATFORM's agent and programs.
function(ms_platform_test name platform script)
  set(bin ${PROJECT_BINARY_DIR}/platform-${platform})
  add_test(NAME ${name} COMMAND ${script} ${ARGN})
  set(env "MS_SOURCE_DIR=${PROJECT_SOURCE_DIR};MS_BUILD_DIR=${PROJECT_BINARY_DIR};MEMSIGHT=$<TARGET_FILE:memsight>;MS_AGENT=${bin}/lib/libmemsight.so;MS_PROGRAMS=${bin}/tests/programs")
  if(platform STREQUAL "arm64")
    list(APPEND env "MS_RUNNER=${MS_AARCH64_RUNNER}" "MEMSIGHT_SYSROOT=${MS_AARCH64_ROOT}")
  else()
    list(APPEND env "MS_RUNNER=") # the program itself, with this platform's agent
  endif()
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${env}" FIXTURES_REQUIRED platform_${platform}
    LABELS platform TIMEOUT 300)
endfunction()

# ms_platform_cmd_test(NAME PLATFORM SCRIPT ARGS...): the same with PLATFORM's own
# memsight command (under the runner) instead of this build's.
function(ms_platform_cmd_test name platform script)
  ms_platform_test(${name} ${platform} ${script} ${ARGN})
  set(runner "")
  if(platform STREQUAL "arm64")
    set(runner "${MS_AARCH64_RUNNER} ")
  endif()
  set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT
    "MEMSIGHT=${runner}${PROJECT_BINARY_DIR}/platform-${platform}/bin/memsight")
endfunction()

function(ms_platform_tree platform toolchain)
  add_test(NAME platform_${platform}_build COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR}
    -DBIN=${PROJECT_BINARY_DIR}/platform-${platform} -DTOOLCHAIN=${PROJECT_SOURCE_DIR}/cmake/${toolchain}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/platform/build.cmake)
  set_tests_properties(platform_${platform}_build PROPERTIES FIXTURES_SETUP platform_${platform}
    LABELS platform TIMEOUT 900)
endfunction()

set(MS_GT ${CMAKE_CURRENT_SOURCE_DIR}/integration/agent_groundtruth.py)
set(MS_LK ${CMAKE_CURRENT_SOURCE_DIR}/integration/leaks_ground_truth.py)
set(MS_XR ${CMAKE_CURRENT_SOURCE_DIR}/integration/platform_cross.py)
set(MS_RB_CHECK ${CMAKE_CURRENT_SOURCE_DIR}/integration/robust_check.py)
string(REPEAT "configuration" 8 MS_RB_TEXT) # text that reads as addresses near 0x6e6f...
if(MS_QEMU_AARCH64 AND MS_AARCH64_GCC)
  ms_platform_tree(arm64 aarch64-linux-gnu.cmake)
  # exact per-site live bytes, with and without frame pointers, each unwinder
  foreach(p heap deep mmap threads)
    ms_platform_test(platform_arm64_gt_${p}_o2 arm64 ${MS_GT} gt_${p}_o2)
    ms_platform_test(platform_arm64_gt_${p}_fp arm64 ${MS_GT} gt_${p}_fp)
  endforeach()
  ms_platform_test(platform_arm64_gt_deep_fp_fpunwind arm64 ${MS_GT} gt_deep_fp unwind=fp)
  # frame pointers at the top of the address space, in the environment's text
  ms_platform_test(platform_arm64_robust_bad_fp arm64 ${MS_RB_CHECK} "unwind=fp full" rb_bad_fp)
  # a sysroot mixing the cross toolchain's loader and Debian's libc.so.6 (both installed):
  # a new thread never starts there; the agent starts none and the program runs
  if(EXISTS /lib/aarch64-linux-gnu/libc.so.6 AND EXISTS /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1)
    ms_platform_test(platform_arm64_mixed_sysroot arm64
      ${CMAKE_CURRENT_SOURCE_DIR}/integration/platform_mixed_sysroot.py /usr/aarch64-linux-gnu gt_heap_o2)
    set_property(TEST platform_arm64_mixed_sysroot APPEND PROPERTY ENVIRONMENT "MS_QEMU=${MS_QEMU_AARCH64}")
  endif()
  # the exit scan does not wait its 1 s stop timeout for qemu's helper thread
  ms_platform_test(platform_arm64_robust_exit_pause arm64 ${MS_RB_CHECK} --max-pause-ms 700
    leak_check=exit gt_heap_o2)
  ms_platform_test(platform_arm64_robust_bad_fp_env arm64 ${MS_RB_CHECK} --frames-known
    --env RB_TEXT=${MS_RB_TEXT} "unwind=fp full" rb_bad_fp env)
  # return addresses signed with pointer authentication: CFI and frame-pointer walks
  ms_platform_test(platform_arm64_gt_heap_pac arm64 ${MS_GT} gt_heap_pac)
  ms_platform_test(platform_arm64_gt_deep_pacfp_fpunwind arm64 ${MS_GT} gt_deep_pacfp unwind=fp)
  # leak scans: registers and stacks of stopped threads as roots, TLS, classes, tags
  foreach(p stack register global tls thread_stack tree interior threads64 tagged)
    ms_platform_test(platform_arm64_leaks_${p} arm64 ${MS_LK} lk_${p} api)
  endforeach()
  ms_platform_test(platform_arm64_leaks_exit_tree arm64 ${MS_LK} lk_tree exit)
  # snapshots written on AArch64: report, merge, diff and exports on x86-64
  ms_platform_test(platform_arm64_cross_gt_heap_o2 arm64 ${MS_XR} gt_heap_o2)
  ms_platform_test(platform_arm64_cross_gt_mmap_fp arm64 ${MS_XR} gt_mmap_fp)
  # GOT hooks (R_AARCH64_JUMP_SLOT/GLOB_DAT) and memsight_start(): dlopen'ed, linked,
  # the program's own allocator, modules glibc loads itself
  foreach(m dlopen linked prestart modules)
    ms_platform_test(platform_arm64_gothook_${m} arm64 ${CMAKE_CURRENT_SOURCE_DIR}/integration/gothook_check.py ${m})
  endforeach()
  # sampled mode: the peak and the thresholds, blocks far above the rate known exactly
  ms_platform_test(platform_arm64_sampling_peak arm64 ${CMAKE_CURRENT_SOURCE_DIR}/integration/sampling_peak.py)
  # the control thread: memsight dump (from x86-64), interval series, memsight_dump();
  # not the idle single-threaded server (qemu-user lacks process_vm_readv, which the
  # agent reads the interrupted instruction with: docs/platforms.md)
  ms_platform_test(platform_arm64_sampling_dump arm64 ${CMAKE_CURRENT_SOURCE_DIR}/integration/sampling_dump.py)
  # unwind=libunwind with Debian's libunwind for arm64 (libunwind-dev:arm64): it must run
  set(MS_A64_PC /usr/lib/aarch64-linux-gnu/pkgconfig)
  if(EXISTS ${MS_A64_PC}/libunwind.pc)
    foreach(p heap deep mmap threads)
      ms_platform_test(platform_arm64_gt_${p}_o2_libunwind arm64 ${MS_GT} gt_${p}_o2
        --unwinder=libunwind unwind=libunwind)
    endforeach()
  else()
    message(STATUS "memsight: libunwind-dev:arm64 not installed: no arm64 unwind=libunwind tests")
  endif()
  # the memsight command built for AArch64, run under qemu-user: the same snapshots
  # reported, merged, diffed and exported; the Android HPROF dump analysed
  if(EXISTS ${MS_A64_PC}/libdw.pc AND EXISTS ${MS_A64_PC}/zlib.pc AND EXISTS ${MS_A64_PC}/libzstd.pc)
    ms_platform_cmd_test(platform_arm64_cmd_cross_gt_heap_o2 arm64 ${MS_XR} gt_heap_o2)
    ms_platform_cmd_test(platform_arm64_cmd_hprof_dialer arm64
      ${CMAKE_CURRENT_SOURCE_DIR}/integration/hprof_samples.py dialer)
  else()
    message(STATUS "memsight: libdw, zlib or zstd for arm64 not installed: no arm64 command tests")
  endif()
  # a real AArch64 program: Debian's CPython (libpython3.11:arm64) under the agent
  if(EXISTS /usr/lib/aarch64-linux-gnu/libpython3.11.so.1.0 AND EXISTS /lib/ld-linux-aarch64.so.1)
    ms_platform_test(platform_arm64_python arm64 ${CMAKE_CURRENT_SOURCE_DIR}/integration/platform_python.py)
  else()
    message(STATUS "memsight: libpython3.11:arm64 not installed: no platform_arm64_python")
  endif()
else()
  message(STATUS "memsight: no qemu-aarch64-static or aarch64-linux-gnu-gcc: no arm64 platform tests")
endif()
if(MS_MUSL_GCC)
  ms_platform_tree(musl x86_64-linux-musl.cmake)
  foreach(p heap deep mmap threads)
    ms_platform_test(platform_musl_gt_${p}_o2 musl ${MS_GT} gt_${p}_o2)
    ms_platform_test(platform_musl_gt_${p}_fp musl ${MS_GT} gt_${p}_fp)
  endforeach()
  foreach(p stack register global tls tree threads64)
    ms_platform_test(platform_musl_leaks_${p} musl ${MS_LK} lk_${p} api)
  endforeach()
  ms_platform_test(platform_musl_cross_gt_heap_o2 musl ${MS_XR} gt_heap_o2)
  # a frame pointer into the environment's text above main(): unwind=fp stops there
  # instead of taking text for return addresses; one at the top of the address space
  ms_platform_test(platform_musl_robust_bad_fp musl ${MS_RB_CHECK} --frames-known
    --env RB_TEXT=${MS_RB_TEXT} "unwind=fp full" rb_bad_fp env)
  ms_platform_test(platform_musl_robust_bad_fp_top musl ${MS_RB_CHECK} "unwind=fp full" rb_bad_fp)
  # started as ./prog: named by its absolute path, symbolized
  ms_platform_test(platform_musl_robust_relpath musl
    ${CMAKE_CURRENT_SOURCE_DIR}/integration/robust_relpath.py gt_heap_fp)
  ms_platform_test(platform_musl_sampling_peak musl ${CMAKE_CURRENT_SOURCE_DIR}/integration/sampling_peak.py)
  # not the idle single-threaded server: musl's waits enter the kernel outside the
  # wrappers the agent knows (docs/platforms.md)
  ms_platform_test(platform_musl_sampling_dump musl ${CMAKE_CURRENT_SOURCE_DIR}/integration/sampling_dump.py)
  # no libunwind built for musl: unwind=libunwind is said (stderr, META, HLTH) and the
  # cached unwinder gives the same exact results
  ms_platform_test(platform_musl_gt_heap_o2_libunwind musl ${MS_GT} gt_heap_o2
    --unwinder=dwarf-cached "--note=unwind=libunwind: no libunwind in this build" unwind=libunwind)
else()
  message(STATUS "memsight: no musl-gcc: no musl platform tests")
endif()

# The agent's own CRC-32 (no zlib on the cross and musl targets) against zlib's.
ms_unit_test(platform_unit_crc32 SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_crc32.c LIBS ms_core)
target_include_directories(platform_unit_crc32 PRIVATE ${PROJECT_SOURCE_DIR}/src)
set_tests_properties(platform_unit_crc32 PROPERTIES LABELS platform)
