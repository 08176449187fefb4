import EmbeddedFirestore
import Foundation
import Hummingbird
import NIOCore
import ServiceLifecycle
import Synchronization

/// A counter of changes; the console's stream tells the page each time it moved.
public final class ActivityCounter: Sendable {
    let value = Atomic<Int>(0)

    public init() {}

    public func bump() { value.add(1, ordering: .relaxed) }
    public var current: Int { value.load(ordering: .relaxed) }
}

/// The console's page, script and style, compiled into the executable (no files to find at run time).
enum ConsoleFiles {
    static let files: [String: (bytes: [UInt8], contentType: String)] = [
        "index.html": (PackageResources.index_html, "text/html; charset=utf-8"),
        "console.js": (PackageResources.console_js, "text/javascript; charset=utf-8"),
        "views.js": (PackageResources.views_js, "text/javascript; charset=utf-8"),
        "firestore.js": (PackageResources.firestore_js, "text/javascript; charset=utf-8"),
        "console.css": (PackageResources.console_css, "text/css; charset=utf-8"),
    ]

    static func file(_ name: String) throws(LocalAPIError) -> LocalResponse {
        guard let file = files[name] else { throw .notFound("The console has no file \(name.prefix(100)).") }
        var response = LocalResponse(text: String(decoding: file.bytes, as: UTF8.self), contentType: file.contentType)
        response.headers["Cache-Control"] = "no-cache"
        response.headers["Content-Security-Policy"] = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response
    }

    /// `GET /herald/console/stream`: server-sent events, one `change` each time `activity` moved (looked at
    /// four times a second, so a burst of writes is one message), and a comment every 15 s to keep
    /// proxies from closing it. It ends after 10 minutes (the browser reconnects) or when the server stops.
    static func changeStream(_ activity: ActivityCounter) -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
            body: ResponseBody { writer in
                var seen = -1
                var quiet = 0
                let until = ContinuousClock.now + .seconds(600)
                try await writer.write(ByteBuffer(string: "retry: 1000\n\n"))
                while !Task.isCancelled, !Task.isShuttingDownGracefully, ContinuousClock.now < until {
                    let now = activity.current
                    if now != seen {
                        seen = now
                        quiet = 0
                        try await writer.write(ByteBuffer(string: "event: change\ndata: \(now)\n\n"))
                    } else {
                        quiet += 1
                        if quiet % 60 == 0 { try await writer.write(ByteBuffer(string: ": still here\n\n")) }
                    }
                    try? await Task.sleep(for: .milliseconds(250))
                }
                try await writer.finish(nil)
            })
    }
}
