import Foundation
import Testing

/// The test support's constructor (Sources/Foundations/TestRunSettings) runs in the test runner, before Swift Testing reads its settings.
@Suite struct TestRunSettingsTests {
    @Test func theRunnerBoundsHowManyTestsRunAtOnce() {
        let width = ProcessInfo.processInfo.environment["SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH"].flatMap { Int($0) }
        #expect(width.map { $0 > 0 } == true, "the constructor did not run in \(ProcessInfo.processInfo.processName)")
    }
}
