import Hummingbird
import LocalCloud
import Supervision
import Testing

@testable import HeraldTesting

/// Google's emulator takes seconds to bind its port; another test's server can take the port first.
/// Only the emulator's own answer counts as the emulator serving (before, any HTTP answer did, and a
/// function server's 404s were taken for the emulator's: one CI run in a few).
struct EmulatorStartTests {
    @Test func anotherServerOnThePortIsNotTakenForTheEmulator() async throws {
        let router = Router()
        router.get("/") { _, _ in Response(status: .notFound) }
        try await withTestHTTPServer(router) { port in
            let stillStarting = try await ChildProcess.start("/bin/sleep", arguments: ["3"], output: .discarded)
            #expect(await GoogleEmulatorLauncher.waitUntilServing(port: port, process: stillStarting) == false)
            await stillStarting.stop()
        }
    }
}
