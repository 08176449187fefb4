// swift-tools-version:6.2
import PackageDescription

let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility")]
// Compiled optimized in debug builds too: `swift test` runs `herald dev` and the functions as its
// tests' servers, and their codecs, store and signatures unoptimized made a 1,000-member message take
// seconds of CPU for what is milliseconds of work.
let optimizedInTests: [SwiftSetting] = strict + [.unsafeFlags(["-O"], .when(configuration: .debug))]

// One executable per function, in Functions/NAME: this line and those folders are written by `swift run herald infra`
// from FunctionCatalog.all. A list, not the folder's listing: SwiftPM reuses a manifest's result until its text changes.
let functionNames = ["onMessageCreated", "onReadReceipt", "presenceSweeper", "tokenCleanup"]

let package = Package(
    name: "Herald",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "herald", targets: ["HeraldCLI"]),
        .executable(name: "herald-bench", targets: ["HeraldBench"]),
        .executable(name: "herald-fuzz", targets: ["HeraldFuzz"]),
    ] + functionNames.map { .executable(name: $0, targets: [$0]) },
    dependencies: [
        // Without their default traits, which bring in full Foundation (and with it ICU's 39 MB of data)
        // for APIs Herald does not use: Hummingbird's FullFoundation and swift-configuration support,
        // SwiftProtobuf's Foundation streams and field-mask helpers.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0", traits: []),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        // Only for the SQLite amalgamation it compiles (VaporCSQLite): no system SQLite or headers needed.
        .package(url: "https://github.com/vapor/sqlite-nio", from: "1.13.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // The APNs stand-in's certificates (herald dev only).
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
    ],
    targets: [
        // Wire formats any server speaks: JSON (a value, a parser, writers), Base64, percent-encoding,
        // byte search and decimal writing, civil dates (docs/architecture.md says why each is hand-written).
        .target(name: "WireFormats", path: "Sources/Foundations/WireFormats", swiftSettings: optimizedInTests),
        // Time zones: the IANA database's TZif files and POSIX TZ rules.
        .target(name: "ZoneInfo", dependencies: ["WireFormats"], path: "Sources/Foundations/ZoneInfo", swiftSettings: optimizedInTests),
        // Firestore's data model: typed values, documents, paths, writes, and their REST JSON form.
        .target(name: "FirestoreModel", dependencies: ["WireFormats"], path: "Sources/Firestore/FirestoreModel", swiftSettings: optimizedInTests),
        // Firestore change notifications (Eventarc CloudEvents, 1st-gen events) decoded to one type.
        .target(
            name: "FirestoreEvents", dependencies: ["FirestoreModel", "WireFormats"], path: "Sources/Firestore/FirestoreEvents", swiftSettings: optimizedInTests
        ),
        // The same events through SwiftProtobuf's generated types: the reference FirestoreEvents' own protobuf
        // reader is checked against (tests, fuzzing); no function links it.
        .target(
            name: "FirestoreEventsProtobuf",
            dependencies: ["FirestoreEvents", "FirestoreModel", .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            path: "Sources/Firestore/FirestoreEventsProtobuf",
            exclude: ["Generated/README.md"],
            swiftSettings: strict
        ),
        // An HTTP client on SwiftNIO: pooled connections per origin, HTTP/2 over TLS, HTTP/1.1, one deadline per request.
        .target(
            name: "HeraldHTTPClient",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ], path: "Sources/Foundations/HeraldHTTPClient",
            swiftSettings: optimizedInTests
        ),
        // One small client per Google API: auth (service account, metadata server, emulator), Firestore REST, FCM v1.
        // Telemetry: W3C trace context, sampling, a span recorder, OTLP/JSON encoders for traces and
        // metrics, Prometheus's text format.
        .target(
            name: "Telemetry",
            dependencies: ["WireFormats", .product(name: "Tracing", package: "swift-distributed-tracing")], path: "Sources/Foundations/Telemetry",
            swiftSettings: strict),
        .target(
            name: "GoogleClients",
            dependencies: [
                "FirestoreModel", "HeraldHTTPClient", "Telemetry",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                "RSASignatures", "SystemAccess",
                .product(name: "Logging", package: "swift-log"), "WireFormats",
            ], path: "Sources/Clients/GoogleClients",
            swiftSettings: optimizedInTests
        ),
        // Files and the environment on the C library alone (the functions link no Foundation).
        .target(name: "SystemAccess", path: "Sources/Foundations/SystemAccess", swiftSettings: strict),
        // SHA-256 of public identifiers (ledger keys) in Swift: the domain links no TLS library for it.
        .target(name: "HeraldCrypto", path: "Sources/Foundations/HeraldCrypto", swiftSettings: optimizedInTests),
        // RS256 on the BoringSSL swift-nio-ssl compiles in for TLS (its headers come with the NIOSSL
        // product): no second copy, no library to ship or open (docs/architecture.md).
        .target(name: "CBoringSSLRSA", dependencies: [.product(name: "NIOSSL", package: "swift-nio-ssl")], path: "Sources/Foundations/CBoringSSLRSA"),
        .target(name: "RSASignatures", dependencies: ["CBoringSSLRSA"], path: "Sources/Foundations/RSASignatures", swiftSettings: optimizedInTests),
        // ES256 on the same BoringSSL: APNs's provider tokens, signed with the team's .p8 key.
        .target(name: "CBoringSSLP256", dependencies: [.product(name: "NIOSSL", package: "swift-nio-ssl")], path: "Sources/Foundations/CBoringSSLP256"),
        .target(
            name: "P256Signatures", dependencies: ["CBoringSSLP256", "WireFormats"], path: "Sources/Foundations/P256Signatures", swiftSettings: optimizedInTests
        ),
        // What a stored push token is (FCM's, Expo's or APNs's), decided in one place for the functions and the local cloud.
        .target(name: "PushTokens", path: "Sources/Foundations/PushTokens", swiftSettings: optimizedInTests),
        // The push services besides FCM: Expo's push service and Apple's APNs (HTTP/2, provider tokens).
        .target(
            name: "PushClients",
            dependencies: [
                "GoogleClients", "HeraldCore", "HeraldHTTPClient", "P256Signatures", "PushTokens", "Telemetry", "WireFormats",
                .product(name: "Tracing", package: "swift-distributed-tracing"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ], path: "Sources/Clients/PushClients",
            swiftSettings: optimizedInTests),
        // What a function is: a pure plan from (change, documents read) to effects. No I/O.
        .target(
            name: "HeraldCore", dependencies: ["FirestoreModel", "FirestoreEvents", "HeraldCrypto", "ZoneInfo", "WireFormats"],
            path: "Sources/Function/HeraldCore", swiftSettings: optimizedInTests),
        // Where Swift's runtime takes a replacement global executor (the functions run their tasks on NIO's loops).
        .target(name: "ConcurrencyHook", path: "Sources/Foundations/ConcurrencyHook"),
        // The runtime that owns I/O: HTTP server, `invoke`, logging, configuration.
        // An HTTP/1.1 server on SwiftNIO: bounded heads and bodies, pipelining in order, a check of the
        // head before the body is read, graceful stop.
        .target(
            name: "HeraldHTTPServer",
            dependencies: [
                "WireFormats", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ], path: "Sources/Foundations/HeraldHTTPServer",
            swiftSettings: strict),
        .target(
            name: "HeraldRuntime",
            dependencies: [
                "HeraldCore", "FirestoreModel", "FirestoreEvents", "GoogleClients", "HeraldHTTPClient", "HeraldHTTPServer",
                "ConcurrencyHook", "SystemAccess", "PushClients", "PushTokens", "P256Signatures",
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"), "Telemetry", "WireFormats", "ZoneInfo",
            ], path: "Sources/Runtime/HeraldRuntime",
            swiftSettings: optimizedInTests
        ),
        // Firestore's v1 API as protobuf messages (generated: Scripts/generate-protos.py firestore), for the local cloud's gRPC.
        .target(
            name: "FirestoreProtos", dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")], path: "Sources/Firestore/FirestoreProtos",
            exclude: ["Generated/README.md"]),
        // Firestore on one machine, for any app: documents over SQLite, queries, transactions, import and
        // export, and its REST, gRPC (Listen, Write) and WebChannel protocols. No triggers, no chat.
        .target(
            name: "EmbeddedFirestore",
            dependencies: [
                "FirestoreModel", "FirestoreProtos", "WireFormats",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"), .product(name: "HTTPTypes", package: "swift-http-types"),
            ], path: "Sources/LocalCloud/EmbeddedFirestore",
            swiftSettings: optimizedInTests
        ),
        // Google's cloud on one port around the embedded Firestore, for local runs and tests: trigger
        // delivery, the FCM sink, the scheduler, identity (tokens, metadata server) and the console.
        .target(
            name: "LocalCloud",
            dependencies: [
                "EmbeddedFirestore", "FirestoreModel", "FirestoreEvents", "HeraldHTTPClient", "Supervision", "WireFormats", "PushTokens",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"), .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"), .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
            ], path: "Sources/LocalCloud/LocalCloud",
            // The browser console: compiled in, so `herald dev` needs no files beside it.
            resources: [
                .embedInCode("Console/Files/index.html"), .embedInCode("Console/Files/console.css"), .embedInCode("Console/Files/console.js"),
                .embedInCode("Console/Files/views.js"), .embedInCode("Console/Files/firestore.js"),
            ],
            swiftSettings: optimizedInTests
        ),
        // Child processes for the dev tool and the tests (`herald dev`'s functions, servers under test), through swift-subprocess.
        .target(
            name: "Supervision",
            dependencies: [.product(name: "Subprocess", package: "swift-subprocess"), .product(name: "SystemPackage", package: "swift-system")],
            path: "Sources/Foundations/Supervision",
            swiftSettings: strict
        ),
        // The chat backend's functions, as plain types behind `EventFunction`.
        .target(
            name: "ChatFunctions",
            dependencies: ["HeraldCore", "FirestoreModel", "FirestoreEvents", "PushTokens", "WireFormats", "ZoneInfo"], path: "Sources/Chat/ChatFunctions",
            swiftSettings: optimizedInTests),
        // A team's own data model: a schema file proposed from their documents (`herald schema infer`) and
        // their documents checked against one (`herald schema check`). Pure, like the domain: the CLI reads the data.
        .target(
            name: "ChatSchemaTools", dependencies: ["ChatFunctions", "HeraldCore", "FirestoreModel", "FirestoreEvents", "PushTokens", "WireFormats"],
            path: "Sources/Chat/ChatSchemaTools",
            swiftSettings: strict),
        // A small chat world (people, chats, what their apps write) for `herald dev --seed demo`, `herald send` and tests.
        .target(name: "ChatDemo", dependencies: ["ChatFunctions", "FirestoreModel", "WireFormats"], path: "Sources/Chat/ChatDemo", swiftSettings: strict),
        .executableTarget(
            name: "HeraldCLI",
            dependencies: [
                "HeraldRuntime", "LocalCloud", "EmbeddedFirestore", "ChatFunctions", "ChatSchemaTools", "ChatDemo", "GoogleClients", "HeraldCore",
                "FirestoreModel",
                "FirestoreEvents", "Supervision",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                "HeraldHTTPClient", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"), "Telemetry",
                .product(name: "UnixSignals", package: "swift-service-lifecycle"), "WireFormats", "P256Signatures",
                // Not linked: built with herald, so `herald dev` runs the executables that deploy.
            ] + functionNames.map { .target(name: $0) }, path: "Sources/Tools/HeraldCLI",
            swiftSettings: strict
        ),
        // Test support: start a function server in-process on a free port, find fixtures, executables, Python.
        .target(
            name: "HeraldTesting",
            dependencies: [
                "HeraldRuntime", "HeraldCore", "LocalCloud", "GoogleClients", "HeraldHTTPClient", "ChatFunctions", "ChatDemo", "TestRunSettings", "Supervision",
                "PushTokens",
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"), "FirestoreEvents", "FirestoreModel", .product(name: "HTTPTypes", package: "swift-http-types"),
                "HeraldHTTPServer", .product(name: "HummingbirdCore", package: "hummingbird"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), "WireFormats",
            ], path: "Sources/Tools/HeraldTesting",
            swiftSettings: strict
        ),
        // How many tests run at once, set before Swift Testing starts (see the C file).
        .target(name: "TestRunSettings", path: "Sources/Foundations/TestRunSettings"),
        .executableTarget(
            name: "HeraldFuzz", dependencies: ["FirestoreEvents", "FirestoreEventsProtobuf", "FirestoreModel", "WireFormats"], path: "Fuzz/HeraldFuzz",
            swiftSettings: strict),
        .executableTarget(
            name: "HeraldBench",
            dependencies: [
                "GoogleClients", "HeraldHTTPClient", "HeraldTesting", "HeraldRuntime", "HeraldCore", "ChatFunctions", "FirestoreEvents",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"), "FirestoreModel", .product(name: "Logging", package: "swift-log"),
                "WireFormats",
            ],
            path: "Benchmarks/HeraldBench",
            swiftSettings: strict
        ),
        .testTarget(
            name: "GoogleClientsTests",
            dependencies: [
                "GoogleClients", "HeraldHTTPClient", "FirestoreModel", "HeraldCore", "HeraldTesting",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"), "Telemetry", "WireFormats",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HeraldHTTPClientTests",
            dependencies: [
                "HeraldHTTPClient", "HeraldRuntime", "HeraldTesting",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"), .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ChatFunctionsTests",
            dependencies: [
                "ChatFunctions", "ChatSchemaTools", "HeraldCore", "HeraldRuntime", "HeraldTesting", "FirestoreEvents", "FirestoreModel", "PushTokens",
                .product(name: "Logging", package: "swift-log"), "ChatDemo", "GoogleClients", "WireFormats", "ZoneInfo",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LocalCloudTests",
            dependencies: [
                "LocalCloud", "EmbeddedFirestore", "HeraldTesting", "GoogleClients", "HeraldHTTPClient", "FirestoreModel", "FirestoreEvents", "HeraldCore",
                "HeraldRuntime",
                "ChatFunctions", "ChatDemo",
                "HeraldCLI", "onMessageCreated", "onReadReceipt", "Supervision",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"), .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"), .product(name: "NIOHTTP1", package: "swift-nio"), "Telemetry",
                .product(name: "Tracing", package: "swift-distributed-tracing"), "WireFormats", "HeraldHTTPServer",
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "ChaosTests", dependencies: ["HeraldTesting", "HeraldCLI"], swiftSettings: strict),
        // Hostile data, outages and misconfiguration, each tried on the real executables against `herald dev`.
        .testTarget(
            name: "AdversarialTests",
            dependencies: [
                "HeraldTesting", "HeraldRuntime", "ChatFunctions", "ChatDemo", "FirestoreModel", "FirestoreEvents", "GoogleClients", "HeraldCLI",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), "Supervision", "WireFormats",
            ] + functionNames.map { .target(name: $0) },
            swiftSettings: strict
        ),
        .testTarget(
            name: "HeraldCryptoTests",
            dependencies: [
                "HeraldCrypto", "RSASignatures", "P256Signatures", "HeraldTesting", "FirestoreModel", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"), "WireFormats",
            ],
            swiftSettings: strict),
        .testTarget(name: "SupervisionTests", dependencies: ["Supervision", "HeraldTesting"], swiftSettings: strict),
        .testTarget(name: "FirestoreModelTests", dependencies: ["FirestoreModel", "HeraldTesting", "WireFormats"], swiftSettings: strict),
        .testTarget(name: "WireFormatsTests", dependencies: ["WireFormats", "HeraldTesting"], swiftSettings: strict),
        .testTarget(
            name: "PushClientsTests",
            dependencies: [
                "PushClients", "P256Signatures", "GoogleClients", "HeraldCore", "HeraldHTTPClient", "HeraldTesting", "WireFormats",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "FirestoreEventsTests",
            dependencies: ["FirestoreEvents", "FirestoreEventsProtobuf", "FirestoreModel", "HeraldTesting", "HeraldRuntime", "WireFormats"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HeraldRuntimeTests",
            dependencies: [
                "HeraldRuntime", "HeraldCore", "HeraldTesting", "ChatFunctions", "ChatDemo", "FirestoreEvents", "FirestoreModel", "GoogleClients", "HeraldCLI",
                "PushClients", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HTTPTypes", package: "swift-http-types"), "HeraldHTTPClient",
                "HeraldHTTPServer", .product(name: "Logging", package: "swift-log"), "Telemetry", "WireFormats",
            ] + functionNames.map { .target(name: $0) },
            swiftSettings: strict
        ),
    ]
        + functionNames.map {
            .executableTarget(
                name: $0,
                dependencies: ["HeraldRuntime", "ChatFunctions"],
                path: "Functions/\($0)",
                swiftSettings: strict,
                // A function exports no symbols: the 4.5 MB dynamic symbol table Swift's driver asks for is
                // for plug-ins and debuggers, and a stripped image has neither.
                linkerSettings: [
                    .unsafeFlags(
                        [
                            "-use-ld=lld", "-Xlinker", "--no-export-dynamic", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                            // The C++ standard library linked in, not loaded (Infra/link/libstdc++.so says why).
                            "-L", Context.packageDirectory + "/Infra/link",
                            // The functions an event runs, placed first and together (Scripts/symbol-order.py; with
                            // Infra/link/swift-build-release's one section per function): fewer code pages touched.
                            "-Xlinker", "--symbol-ordering-file=" + Context.packageDirectory + "/Infra/link/symbol-order.txt",
                            "-Xlinker", "--no-warn-symbol-ordering",
                        ],
                        .when(platforms: [.linux], configuration: .release))
                ]
            )
        }
)
