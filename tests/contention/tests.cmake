# The contention harness (issue 22, `make test-contention`, tests/contention/run.sh) on fixture
# selections that need no sandbox: its table, its exit codes (a failed main run, a template outside
# the allow-list, a missing report), --quiet, and no load process or mount left after it. The
# harness's real runs (the `make run` selection under load) are `make test-contention`, not here.
add_test(NAME contention:harness
  COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/contention/test_harness.py $<TARGET_FILE:abxlua>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(contention:harness PROPERTIES TIMEOUT 300)
