#ifndef HERALD_CONCURRENCY_HOOK_H
#define HERALD_CONCURRENCY_HOOK_H

/// Where Swift's runtime looks for a replacement of its global executor's enqueue
/// (`swift_task_enqueueGlobal_hook`). Linked statically, the runtime's symbols are hidden from `dlsym`,
/// so the address is taken at link time instead.
void * _Nullable * _Nonnull herald_swift_task_enqueueGlobal_hook(void);

#endif
