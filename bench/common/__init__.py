"""What the benches share: the machine and result tables (`report`), seeded items (`items`), LoCoMo (`locomo`),
and the fault drills the test suite runs short (`bitrot`, `crash_check`, `pg_crash`, `pg_index_check`,
`chroma_server`, `loop_stall`)."""
