import Foundation
import HeraldTesting
import NIOCore
import NIOPosix
import Testing

/// A test that ends by cancellation inside the local cloud (a skip is one: `Test.cancel` cancels the
/// test's task) ends: every service and every connection stops on cancellation as on a graceful
/// shutdown. A server that waited on its channel alone, or a connection that had said nothing yet,
/// held the test forever.
@Suite struct CancelledTestTests {
    @Test func aCancelledBodyWithAQuietConnectionStopsTheLocalCloud() async throws {
        // The cloud runs in a task of its own, so that a hang fails this test instead of holding it.
        let (ends, ending) = AsyncStream.makeStream(of: Void.self)
        Task {
            defer { ending.finish() }
            try await withLocalCloud { local in
                // A connection that says nothing, as a client's pooled one may be.
                let quiet = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .connect(host: "127.0.0.1", port: local.port).get()
                defer { quiet.close(promise: nil) }
                withUnsafeCurrentTask { $0?.cancel() }
                throw CancellationError()
            }
        }
        let ended = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in ends {}
                return !Task.isCancelled
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(30))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        #expect(ended, "the local cloud was still running 30 s after its body was cancelled")
    }
}
