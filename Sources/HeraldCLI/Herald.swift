import ArgumentParser
import HeraldRuntime

@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Herald's developer command line.",
        subcommands: [Version.self]
    )
}

struct Version: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print Herald's version.")
    func run() { print("herald \(HeraldVersion.current)") }
}

