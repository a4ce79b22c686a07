# Fuzz targets (tests/fuzz/fuzz_<name>.c, seeds in tests/fuzz/corpus/<name>/).
#  - With -DABX_FUZZ=ON (clang; `make fuzz`): libFuzzer executables fuzz_<name>, linked with
#    -fsanitize=fuzzer (the libraries are compiled with -fsanitize=fuzzer-no-link,address,undefined
#    by the ABX_FUZZ block of CMakeLists.txt); `cmake --build --target fuzz_all` builds them all and
#    tests/fuzz/run.sh runs them.
#  - Otherwise (gcc, `make test`): the same sources with tests/fuzz/replay.c as main(), and one ctest
#    per target that replays its seed corpus, so the targets and seeds cannot rot unnoticed.
# Crashing inputs found by fuzzing are kept in tests/fuzz/<name>/crashes/ and are not replayed.
set(ABX_FUZZ_TARGETS connect yaml json_lua dotenv select route api_route multipart ndjson desktop)
set(ABX_FUZZ_BINARIES "")
foreach(name IN LISTS ABX_FUZZ_TARGETS)
  if(ABX_FUZZ)
    add_executable(fuzz_${name} ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_${name}.c)
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
  else()
    add_executable(fuzz_${name} ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_${name}.c
                   ${CMAKE_SOURCE_DIR}/tests/fuzz/replay.c)
    add_test(NAME fuzz-replay:${name}
             COMMAND fuzz_${name} ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/${name})
    set_tests_properties(fuzz-replay:${name} PROPERTIES TIMEOUT 120 LABELS fuzz)
  endif()
  target_link_libraries(fuzz_${name} PRIVATE abx_bindings)
  list(APPEND ABX_FUZZ_BINARIES fuzz_${name})
endforeach()
# the platform targets see platform/'s private headers (tests may cross the boundary)
foreach(name route api_route multipart)
  target_link_libraries(fuzz_${name} PRIVATE abx_platform)
  target_include_directories(fuzz_${name} PRIVATE ${CMAKE_SOURCE_DIR}/platform)
endforeach()
target_sources(fuzz_multipart PRIVATE ${CMAKE_SOURCE_DIR}/tests/fuzz/envd_jail.c)
if(ABX_FUZZ)
  add_custom_target(fuzz_all DEPENDS ${ABX_FUZZ_BINARIES})
endif()
