//! Test programs for numakit's VM suite (see `src/bin/`). Nothing here is
//! part of numakit; the programs only allocate, touch and hold memory so
//! tests can check where the kernel put it.
