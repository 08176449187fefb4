#include "ConcurrencyHook.h"
#include <stdint.h>

extern void *swift_task_enqueueGlobal_hook;

void **herald_swift_task_enqueueGlobal_hook(void) { return &swift_task_enqueueGlobal_hook; }

// The runtime's `swift_job_run(Job *, SerialExecutorRef)`, Swift's calling convention; the executor
// reference is two words, both zero for the generic executor.
extern __attribute__((swiftcall)) void swift_job_run(void *job, void *identity, uintptr_t implementation);

void herald_run_job_on_generic_executor(void *job) { swift_job_run(job, 0, 0); }
