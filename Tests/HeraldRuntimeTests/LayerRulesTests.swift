import Foundation
import HeraldTesting
import Testing

/// The layers docs/architecture.md draws are the package's: its table names every module once, and
/// each module depends only on modules of its own layer or the layers below it (from `swift package
/// describe`). The runtime, beside the functions, knows no chat.
@Suite struct LayerRulesTests {
    /// The "Layers" table of docs/architecture.md, highest first: each row's layer (0 the lowest), its
    /// folder, and its modules; `Functions/*` stands for the function executables.
    static func rows(in doc: String) -> [(layer: Int, folder: String, modules: [String])] {
        guard let start = doc.range(of: "\n## Layers\n") else { return [] }
        let lines = doc[start.upperBound...].split(separator: "\n")
        let rows = Array(lines.drop(while: { !$0.hasPrefix("| ") }).prefix(while: { $0.hasPrefix("|") }).dropFirst(2))
        func quoted(_ cell: Substring) -> [String] { cell.split(separator: "`").enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) } }
        return rows.enumerated().compactMap { index, row in
            let cells = row.split(separator: "|", omittingEmptySubsequences: false)
            guard cells.count > 3 else { return nil }
            return (rows.count - 1 - index, quoted(cells[2]).first ?? "", quoted(cells[3]).filter { $0.first?.isUppercase == true })
        }
    }

    /// Each module's layer, 0 the lowest.
    static func layers(in doc: String) -> [String: Int] {
        Dictionary(rows(in: doc).flatMap { row in row.modules.map { ($0, row.layer) } }, uniquingKeysWith: { first, _ in first })
    }

    /// Modules under `Sources/` that are not in their layer's folder (`Sources/{folder}/{module}`).
    static func misplaced(in doc: String, _ targets: [String: ModuleRulesTests.Target]) -> [String] {
        let folders = Dictionary(rows(in: doc).flatMap { row in row.modules.map { ($0, row.folder) } }, uniquingKeysWith: { first, _ in first })
        return targets.values.filter { $0.path.hasPrefix("Sources/") }.compactMap { target in
            let wanted = folders[target.name].map { "\($0)/\(target.name)" }
            return target.path == wanted ? nil : "\(target.name) is at \(target.path), its layer's folder is \(folders[target.name] ?? "none")"
        }.sorted()
    }

    /// What breaks the layers: a module missing from the table, or a dependency on a higher layer.
    static func violations(of layers: [String: Int], in targets: [String: ModuleRulesTests.Target]) -> [String] {
        var found: [String] = []
        func layer(_ target: ModuleRulesTests.Target) -> Int? { layers[target.name] ?? (target.path.hasPrefix("Functions/") ? layers["Functions/*"] : nil) }
        for target in targets.values.sorted(by: { $0.name < $1.name }) where !target.path.hasPrefix("Tests/") {
            guard let own = layer(target) else {
                found.append("\(target.name) is in no layer")
                continue
            }
            for dependency in target.targets {
                guard let other = targets[dependency].flatMap(layer) else { continue }
                if other > own { found.append("\(target.name) depends on \(dependency), a layer above it") }
            }
        }
        return found
    }

    @Test func theArchitecturesLayersAreThePackages() async throws {
        let doc = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let layers = Self.layers(in: doc)
        #expect(layers.count > 30, "the Layers table of docs/architecture.md: \(layers)")
        #expect(Set(layers.values).count >= 6)
        let targets = try await ModuleRulesTests.describe()
        let found = Self.violations(of: layers, in: targets)
        #expect(found.isEmpty, "\(found)")
        #expect(Self.misplaced(in: doc, targets).isEmpty, "\(Self.misplaced(in: doc, targets))")
        let named = Set(layers.keys).subtracting(["Functions/*"])
        #expect(named.isSubset(of: Set(targets.keys)), "the table names modules the package lacks: \(named.subtracting(targets.keys))")
        let chat = try ModuleRulesTests.violations(of: "HeraldRuntime", forbidden: ["ChatFunctions", "ChatSchemaTools", "ChatDemo"], in: targets)
        #expect(chat.isEmpty, "\(chat)")
    }

    @Test func aDependencyUpwardsAndAModuleWithoutALayerAreFound() {
        let doc =
            "# A\n\n## Layers\n\nText.\n\n| layer | folder | modules |\n| --- | --- | --- |\n| top | `Sources/Top` | `App`, `Functions/*` |\n| bottom | `Sources/Bottom` | `Base` |\n\n## Next\n"
        let layers = Self.layers(in: doc)
        #expect(layers == ["App": 1, "Functions/*": 1, "Base": 0])
        let targets: [String: ModuleRulesTests.Target] = [
            "App": .init(name: "App", path: "Sources/App", targets: ["Base"], products: []),
            "Base": .init(name: "Base", path: "Sources/Base", targets: ["App"], products: []),
            "onX": .init(name: "onX", path: "Functions/onX", targets: ["App"], products: []),
            "Stray": .init(name: "Stray", path: "Sources/Stray", targets: [], products: []),
            "AppTests": .init(name: "AppTests", path: "Tests/AppTests", targets: ["App"], products: []),
        ]
        #expect(Self.violations(of: layers, in: targets) == ["Base depends on App, a layer above it", "Stray is in no layer"])
        #expect(
            Self.misplaced(in: doc, targets) == [
                "App is at Sources/App, its layer's folder is Sources/Top", "Base is at Sources/Base, its layer's folder is Sources/Bottom",
                "Stray is at Sources/Stray, its layer's folder is none",
            ])
    }
}
