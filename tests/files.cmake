# Tests of how memsight creates, replaces and opens files (docs/files.md): -o into devices,
# FIFOs and links, names planted by another user in a shared directory, full disks.
# Names start with files_.
ms_integration_test(files_output ${CMAKE_CURRENT_LIST_DIR}/integration/files_output.py)
# A FIFO at the exit snapshot's name, planted temporary names, FIFOs at the names leaks,
# smaps --explain and dump wait for: another name, no hang, only the owner's regular files.
ms_integration_test(files_planted ${CMAKE_CURRENT_LIST_DIR}/integration/files_planted.py)
set_tests_properties(files_planted PROPERTIES SKIP_RETURN_CODE 77)
# ulimit -f, a full tmpfs, no address space left: the program unharmed, the cause told;
# leftovers cleaned.
ms_test_program(fs_fill_as SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/programs/fs_fill_as.c)
ms_integration_test(files_full ${CMAKE_CURRENT_LIST_DIR}/integration/files_full.py)
# sync=: snapshot files fsync'ed before they are named, or not (sync=0)
add_library(fsync_shim SHARED ${CMAKE_CURRENT_SOURCE_DIR}/programs/fsync_shim.c)
target_link_libraries(fsync_shim PRIVATE dl)
set_target_properties(fsync_shim PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${MS_TEST_BIN}/programs)
ms_integration_test(files_sync ${CMAKE_CURRENT_LIST_DIR}/integration/files_sync.py)
