# Configures and builds the tree of another platform (tests/platforms.cmake): the agent
# and its test programs, and the command where the target's libraries are installed:
#   cmake -DSRC=... -DBIN=... -DTOOLCHAIN=... -P tests/platform/build.cmake
foreach(v SRC BIN TOOLCHAIN)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "build.cmake: ${v} not set")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SRC} -B ${BIN} -DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN}
  -DMEMSIGHT_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring ${BIN} failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BIN} -j 2 RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building ${BIN} failed")
endif()
