# `abxlua mcp` (issue 15 part 2): SIGINT / SIGTERM mid-way through a tool call and stdin's end
# (exit 2 / 0, only the server's own sandboxes killed, nothing left; ~3 s), and the streamable
# HTTP transport (JSON and SSE answers, version negotiation, the session headers, DELETE, GET;
# ~2 s). Both run sandboxes on the local platform.
# RUN_SERIAL: both look at the processes and mounts of the machine
add_test(NAME mcp:interrupt
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/mcp/test_mcp_interrupt.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(mcp:interrupt PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
add_test(NAME mcp:http
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/mcp/test_mcp_http.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(mcp:http PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
