#include "ConcurrencyHook.h"

extern void *swift_task_enqueueGlobal_hook;

void **herald_swift_task_enqueueGlobal_hook(void) { return &swift_task_enqueueGlobal_hook; }
