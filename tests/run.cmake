# memsight run joined with the kernel's accounting (--watch).
ms_integration_test(run_watch ${CMAKE_CURRENT_LIST_DIR}/integration/run_watch.py)
