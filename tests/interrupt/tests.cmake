# Interrupts and hard kills leave nothing behind (issue 5, item 1). RUN_SERIAL: it looks at the
# processes of the machine.
add_test(NAME interrupt COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/interrupt/test_interrupt.py $<TARGET_FILE:abxlua>)
set_tests_properties(interrupt PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE)
