# Conformance (issue 4 item 8, issue 10 item 8): the official E2B JS SDK (npm e2b, each version
# pinned with its own package-lock.json in tests/conformance/sdk-<version>/) against
# `abxlua serve`, in both addressing modes: url (E2B_API_URL + E2B_SANDBOX_URL overrides) and tls
# (`serve --tls`, the SDK given only the key, E2B_DOMAIN and the CA). Needs root, bubblewrap, node
# and npm (exit 77 = skipped); a serve without the mode's feature (e.g. no --tls) fails.
foreach(sdk 2.50.0 2.51.0)
  foreach(mode url tls)
    add_test(NAME conformance-e2b-${sdk}-${mode}
             COMMAND bash ${CMAKE_SOURCE_DIR}/tests/conformance/run.sh $<TARGET_FILE:abxlua> ${sdk} ${mode})
    set_tests_properties(conformance-e2b-${sdk}-${mode} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77
                         LABELS conformance)
  endforeach()
endforeach()
# The official @e2b/code-interpreter package (pinned in ci-<version>/) against the built-in
# code-interpreter-v1 template, in both addressing modes (code_interpreter.mjs)
foreach(mode url tls)
  add_test(NAME conformance-code-interpreter-2.8.0-${mode}
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/conformance/run.sh $<TARGET_FILE:abxlua> ci-2.8.0 ${mode})
  set_tests_properties(conformance-code-interpreter-2.8.0-${mode} PROPERTIES TIMEOUT 600
                       SKIP_RETURN_CODE 77 LABELS conformance)
endforeach()
# The official e2b SDK's Template() builder and Template.build against serve's template build API
# (template_build.mjs; a fresh build cache per run)
foreach(mode url tls)
  add_test(NAME conformance-template-build-2.51.0-${mode}
           COMMAND bash ${CMAKE_SOURCE_DIR}/tests/conformance/run.sh $<TARGET_FILE:abxlua> build-2.51.0 ${mode})
  set_tests_properties(conformance-template-build-2.51.0-${mode} PROPERTIES TIMEOUT 600
                       SKIP_RETURN_CODE 77 LABELS conformance)
endforeach()
