# Tests of the fleet area (docs/fleet.md): labels, metrics for Prometheus, profiles in
# ClickHouse. Names start with fleet_.
ms_unit_test(fleet_unit_labels SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_fleet_labels.c
  LIBS ms_core)
ms_unit_test(fleet_unit_clickhouse SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_fleet_clickhouse.c
  LIBS ms_fleet)
foreach(t labels metrics agent_metrics clickhouse shards prod)
  ms_integration_test(fleet_${t} ${CMAKE_CURRENT_LIST_DIR}/integration/fleet_${t}.py)
  set_tests_properties(fleet_${t} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
