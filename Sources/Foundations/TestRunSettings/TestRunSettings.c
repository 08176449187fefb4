// Linked into the test executable through HeraldTesting: runs before Swift Testing's entry point.
//
// Swift Testing starts every test of the run at once, and their start-up work queues on Swift's
// cooperative pool, which has one thread per core. With ~200 tests on 2 cores an in-process server
// (a local cloud, a stand-in token endpoint) answered only after 5-10 s, past the deadlines of the
// clients under test, and the run failed at random. Three tests per core keeps the cores busy (most
// tests wait on processes and sockets) and the pool's queue short: measured on 2 cores, the longest
// wait of a ready task fell from 10 s to under 0.1 s, and the run took as long as before.
// A value set by the user (e.g. SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=1) wins.
//
// Only in the test runner (HeraldPackageTests.xctest): setenv can move `environ`, and a statically
// linked Swift program that finds its arguments from `environ` (herald-bench, which links the test
// support) then saw none and printed its help for every command.
#define _GNU_SOURCE
#include "TestRunSettings.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void herald_bound_test_parallelism(void) {
    if (strstr(program_invocation_short_name, "PackageTests") == NULL) return;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char width[32];
    snprintf(width, sizeof width, "%ld", cores > 1 ? 3 * cores : 4);
    setenv("SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH", width, 0);
}
