# The quick part of bench/matrix.sh (programs from Debian's archive under every agent
# mode; the whole matrix runs outside the suite): one JVM run, without the agent, in full
# mode and in sampled mode (prefix matrix_).
find_program(MS_MATRIX_JAVA java)
find_program(MS_MATRIX_JAVAC javac)
if(MS_MATRIX_JAVA AND MS_MATRIX_JAVAC)
  ms_integration_test(matrix_jvm ${CMAKE_CURRENT_SOURCE_DIR}/integration/matrix_jvm.py)
endif()
