# Benchmarks (issue 14): `make bench` runs tests/bench/bench.py (not part of `make test`).
# The libcurl floor client is built only when asked for (`make bench`, or bench.py building the
# target itself): EXCLUDE_FROM_ALL keeps it out of the default build.
find_package(Threads REQUIRED)
add_executable(abx-bench-floor EXCLUDE_FROM_ALL
               tests/bench/floor/floor.c tests/bench/floor/floor_http.c)
target_link_libraries(abx-bench-floor PRIVATE PkgConfig::CURL PkgConfig::JANSSON PkgConfig::CRYPTO
                      Threads::Threads)
# The one smoke test of the harness in `make test`: --quick on a few workloads; checks that the
# table has every row asked for and that the JSON parses (77 = skipped without root/bwrap; a
# missing node/npm leaves only the SDK column unchecked and still fails the other two).
add_test(NAME bench_smoke
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/bench/smoke.py --abxlua $<TARGET_FILE:abxlua>
                 --build-dir ${CMAKE_BINARY_DIR})
set_tests_properties(bench_smoke PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77 LABELS bench)
