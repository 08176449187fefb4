import ConcurrencyHook
import NIOCore
import NIOPosix

/// Runs Swift's tasks on NIO's event loops instead of the runtime's own thread pool, as
/// `NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor` does, but
/// with the hook's address taken at link time: NIO looks it up with `dlsym`, which finds nothing in an
/// executable linked with the static Swift runtime (its symbols are hidden). A request's work then
/// starts on the loop that read it, and its answer is written there without a hand-over.
enum EventLoopExecutor {
    typealias EnqueueHook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    /// Installs the hook; false when another hook was there already (then nothing changes). Call it
    /// once, first thing in `main`, before any task is enqueued.
    @discardableResult
    static func install() -> Bool {
        let slot = herald_swift_task_enqueueGlobal_hook()
        guard slot.pointee == nil else { return false }
        let hook: EnqueueHook = { job, _ in
            // `any()` is the loop this thread runs, if it runs one: no thread switch then. The job runs on
            // the generic executor, as it was enqueued: NIO's own `enqueue` runs it on the loop's serial
            // executor, and every nonisolated async call it makes then hops back through this hook
            // (about 30 times an event).
            // A job is run once, by one thread: handing it to another is what enqueueing it means.
            nonisolated(unsafe) let job = unsafeBitCast(job, to: UnsafeMutableRawPointer.self)
            MultiThreadedEventLoopGroup.singleton.any().execute { herald_run_job_on_generic_executor(job) }
        }
        slot.pointee = unsafeBitCast(hook, to: UnsafeMutableRawPointer.self)
        return true
    }

    /// Whether a new task runs on one of NIO's loops: true once the hook took. The hook is the runtime's
    /// private interface (NIO's `dlsym` uses the same one); a toolchain that stopped reading it would
    /// leave every task on the default pool without a word, so start-up asks.
    static func tasksRunOnEventLoops() async -> Bool {
        await Task.detached { MultiThreadedEventLoopGroup.currentEventLoop != nil }.value
    }
}
