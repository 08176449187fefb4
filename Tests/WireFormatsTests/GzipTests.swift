import Foundation
import HeraldTesting
import Testing
import WireFormats

/// Herald's gzip against Python's zlib (the reference every HTTP server reads gzip with): what ours
/// writes, zlib reads back whole; what zlib writes at every level, ours reads; damaged and hostile
/// bodies are refused by name, a bomb within its limit.
@Suite struct GzipTests {
    static func samples() -> [[UInt8]] {
        var generator = SystemRandomNumberGenerator()
        let notifications = (0..<100).map { #"{"to":"ExponentPushToken[T\#($0)]","title":"Family","body":"Alice: Dinner at 6pm","badge":\#($0 % 7)}"# }
        return [
            [], [0], Array("a".utf8), Array(String(repeating: "abc", count: 1000).utf8), Array(("[" + notifications.joined(separator: ",") + "]").utf8),
            (0..<70_000).map { _ in UInt8.random(in: 0...255, using: &generator) },  // incompressible, over the 32 KiB window
            (0..<100_000).map { UInt8(truncatingIfNeeded: $0 / 300) },
        ]
    }

    @Test func whatWeWriteZlibReadsAndWhatZlibWritesWeRead() async throws {
        let python = try await PythonReference.forTest(importing: "gzip")
        let decompress = "import gzip,sys; sys.stdout.buffer.write(gzip.decompress(sys.stdin.buffer.read()))"
        for sample in Self.samples() {
            let ours = Gzip.compress(sample)
            let read = try await ProcessRunner.run(python, ["-c", decompress], stdin: Data(ours))
            #expect(read.status == 0 && Array(read.stdout) == sample, "\(sample.count) bytes: \(read.stderr)")
            for level in [0, 1, 6, 9] {
                let compress = "import gzip,sys; sys.stdout.buffer.write(gzip.compress(sys.stdin.buffer.read(), \(level)))"
                let theirs = try await ProcessRunner.run(python, ["-c", compress], stdin: Data(sample))
                #expect(try Gzip.decompress(Array(theirs.stdout), limit: 1 << 20) == sample, "\(sample.count) bytes at level \(level)")
            }
        }
        // JSON of many similar notifications shrinks a lot.
        let notifications = Self.samples()[4]
        #expect(Gzip.compress(notifications).count * 4 < notifications.count)
    }

    @Test func damagedAndHostileBodiesAreRefusedByName() throws {
        let good = Gzip.compress(Self.samples()[4])
        var badCRC = good
        badCRC[badCRC.count - 5] ^= 0xFF
        var badLength = good
        badLength[badLength.count - 1] ^= 0x01
        let cases: [([UInt8], String)] = [
            ([], "not a gzip body"), (Array("{\"to\":1}".utf8), "not a gzip body"), (Array(good.prefix(good.count / 2)), "truncated"),
            (badCRC, "CRC-32"), (badLength, "length"), (Array(good.prefix(12)) + [0xFF, 0xFF, 0xFF], "truncated"),
        ]
        for (bytes, named) in cases {
            #expect(throws: Gzip.Error.self, "\(named)") { try Gzip.decompress(bytes, limit: 1 << 20) }
            do { _ = try Gzip.decompress(bytes, limit: 1 << 20) } catch { #expect(error.description.contains(named), "\(error)") }
        }
        // 10 MB of zeros is a few kilobytes of gzip: refused at the limit, not read into memory.
        let bomb = Gzip.compress([UInt8](repeating: 0, count: 10_000_000))
        #expect(bomb.count < 100_000)
        do {
            _ = try Gzip.decompress(bomb, limit: 4 << 20)
            Issue.record("a 10 MB body was read past a 4 MiB limit")
        } catch {
            #expect(error.description.contains("more than 4194304 bytes"))
        }
    }
}
