#ifndef HERALD_CONCURRENCY_HOOK_H
#define HERALD_CONCURRENCY_HOOK_H

/// Where Swift's runtime looks for a replacement of its global executor's enqueue
/// (`swift_task_enqueueGlobal_hook`). Linked statically, the runtime's symbols are hidden from `dlsym`,
/// so the address is taken at link time instead.
void * _Nullable * _Nonnull herald_swift_task_enqueueGlobal_hook(void);

/// Runs a job enqueued on the global executor as the global executor runs it: on the generic
/// executor, so the nonisolated async functions it calls need no hop back to it.
void herald_run_job_on_generic_executor(void * _Nonnull job);

#endif
