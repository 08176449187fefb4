/// A function executable's command line, read by hand: three subcommands with a handful of options
/// need no reflection-driven parser, and the one that did (swift-argument-parser) was a third of the
/// work a function did before its port opened and half a megabyte of its size.
struct CommandLineArguments {
    /// One option a subcommand takes: `--name VALUE` (or `--name=VALUE`), or a flag without a value.
    struct Option {
        var name: String
        var value: String?
        var help: String
        var isFlag: Bool { value == nil }

        static func value(_ name: String, _ value: String, _ help: String) -> Option { Option(name: name, value: value, help: help) }
        static func flag(_ name: String, _ help: String) -> Option { Option(name: name, value: nil, help: help) }
    }

    /// One subcommand: its name, what it does, and its options.
    struct Command {
        var name: String
        var abstract: String
        var discussion: String
        var options: [Option]
    }

    /// A command line that cannot be run as written: said on standard error with the usage, exit status 64.
    struct UsageError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Options given, by name (without `--`); a flag's value is "".
    var values: [String: String] = [:]

    /// Reads `arguments` (after the subcommand) for `command`: unknown options and missing values are
    /// usage errors; an option given again overrides the first (a wrapper's default, then the caller's).
    init(_ arguments: [String], for command: Command) throws(UsageError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--"), argument.count > 2 else { throw UsageError("unexpected argument '\(argument)'") }
            var name = String(argument.dropFirst(2))
            var inline: String?
            if let equals = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = command.options.first(where: { $0.name == name }) else { throw UsageError("unknown option '--\(name)'") }
            if option.isFlag {
                guard inline == nil else { throw UsageError("'--\(name)' takes no value") }
                values[name] = ""
            } else if let inline {
                values[name] = inline
            } else {
                guard index < arguments.count, !arguments[index].hasPrefix("--") else { throw UsageError("missing value for '--\(name) <\(option.value!)>'") }
                values[name] = arguments[index]
                index += 1
            }
        }
    }

    subscript(_ name: String) -> String? { values[name] }
    func has(_ flag: String) -> Bool { values[flag] != nil }

    func integer(_ name: String) throws(UsageError) -> Int? {
        guard let text = values[name] else { return nil }
        guard let value = Int(text) else { throw UsageError("'--\(name)' must be a whole number, not '\(text)'") }
        return value
    }

    /// `NAME --help`: the overview and the subcommands (the first is the default).
    static func help(name: String, abstract: String, discussion: String, commands: [Command]) -> String {
        var lines = [
            "OVERVIEW: \(abstract)", "", wrap(discussion), "", "USAGE: \(name) <subcommand>", "", "OPTIONS:", row("-h, --help", "Show help information."), "",
            "SUBCOMMANDS:",
        ]
        for (position, command) in commands.enumerated() { lines.append(row(position == 0 ? "\(command.name) (default)" : command.name, command.abstract)) }
        lines += ["", "  See '\(name) help <subcommand>' for detailed help."]
        return lines.joined(separator: "\n")
    }

    /// `NAME SUBCOMMAND --help`: what it does and every option.
    static func help(name: String, command: Command) -> String {
        var lines = ["OVERVIEW: \(command.abstract)", "", wrap(command.discussion), "", "USAGE: \(name) \(command.name) [<options>]", "", "OPTIONS:"]
        for option in command.options { lines.append(row(option.isFlag ? "--\(option.name)" : "--\(option.name) <\(option.value!)>", option.help)) }
        lines.append(row("-h, --help", "Show help information."))
        return lines.joined(separator: "\n")
    }

    static func row(_ left: String, _ right: String) -> String {
        let padded = "  " + left
        let column = 26
        if padded.count < column { return padded + String(repeating: " ", count: column - padded.count) + right }
        return padded + "\n" + String(repeating: " ", count: column) + right
    }

    /// Words wrapped at 100 columns.
    static func wrap(_ text: String) -> String {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if !line.isEmpty, line.count + 1 + word.count > 100 {
                lines.append(line)
                line = ""
            }
            line += line.isEmpty ? String(word) : " " + word
        }
        if !line.isEmpty { lines.append(line) }
        return lines.joined(separator: "\n")
    }
}
