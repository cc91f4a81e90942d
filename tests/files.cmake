# Tests of how memsight creates, replaces and opens files (docs/files.md): -o into devices,
# FIFOs and links, names planted by another user in a shared directory, full disks.
# Names start with files_.
ms_integration_test(files_output ${CMAKE_CURRENT_LIST_DIR}/integration/files_output.py)
