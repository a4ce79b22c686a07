# The client's route version per provider capability (v2_routes), against a recording fake.
add_test(NAME client_routes COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/routes/test_routes.py $<TARGET_FILE:abxlua>)
set_tests_properties(client_routes PROPERTIES TIMEOUT 120)
