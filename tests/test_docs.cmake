# docs/tuning.md must list exactly the settings the code has.
add_test(NAME docs_tuning_current
         COMMAND ${PROJECT_SOURCE_DIR}/scripts/gen-tuning.sh --check $<TARGET_FILE:nodecoll-info>)
set_tests_properties(docs_tuning_current PROPERTIES LABELS "${NODECOLL_MPI};quick")
