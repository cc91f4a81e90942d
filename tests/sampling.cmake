# Tests of the production-mode area: Poisson byte sampling, the control thread
# (dump on signal, periodic series, peak, triggers), guardrails and `memsight dump`.
# Names start with sampling_.
ms_unit_test(sampling_sampler SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_sampler.c
  ${PROJECT_SOURCE_DIR}/src/agent/sampler.c LIBS m)
target_include_directories(sampling_sampler PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
