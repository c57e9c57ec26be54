internal import ArgumentParser
internal import Foundation
internal import SofaClient
internal import SofaCluster

/// `sofa whoami`: who the connection is signed in as.
struct WhoAmI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "whoami", abstract: "Print the signed-in user and roles.")
    @OptionGroup var options: GatewayOptions

    func run() async throws {
        try await reporting {
            let client = try await options.connect()
            defer { client.close() }
            let session = try await client.session()
            printJSON(.object(JSONObject([("name", session.name.isEmpty ? .null : .string(session.name)),
                                          ("roles", .array(session.roles.map(JSON.string)))])))
        }
    }
}

/// `sofa user add|passwd|roles|delete|list`: the users of `_users`.
struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Add, list and delete users; change a password or roles.",
        subcommands: [Add.self, Passwd.self, Roles.self, Remove.self, List.self])

    static func roles(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    static func printUser(_ user: SofaClient.Users.User) {
        printJSON(.object(JSONObject([("name", .string(user.name)), ("roles", .array(user.roles.map(JSON.string))),
                                      ("rev", .string(user.rev))])))
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a user (server admins).")
        @Argument var name: String
        @Option(name: .customLong("new-password"), help: "The user's password (else read from stdin).") var newPassword: String?
        @Option(help: "Roles, comma-separated.") var roles: String = ""
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let password = try newPassword ?? UserCommand.readPassword()
                let client = try await options.connect()
                defer { client.close() }
                UserCommand.printUser(try await client.users.create(name, password: password, roles: UserCommand.roles(roles)))
            }
        }
    }

    struct Passwd: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change a user's password (your own, or any as a server admin).")
        @Argument var name: String
        @Option(name: .customLong("new-password"), help: "The new password (else read from stdin).") var newPassword: String?
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let password = try newPassword ?? UserCommand.readPassword()
                let client = try await options.connect()
                defer { client.close() }
                UserCommand.printUser(try await client.users.setPassword(name, password))
            }
        }
    }

    struct Roles: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Replace a user's roles (server admins).")
        @Argument var name: String
        @Argument(help: "Roles, comma-separated (\"\" for none).") var roles: String
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                UserCommand.printUser(try await client.users.setRoles(name, UserCommand.roles(roles)))
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a user (server admins).")
        @Argument var name: String
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                try await client.users.delete(name)
                printJSON(.object(JSONObject([("ok", true), ("deleted", .string(name))])))
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the users (server admins).")
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                for user in try await client.users.list() { UserCommand.printUser(user) }
            }
        }
    }

    /// A password from the first line of stdin (so that it is in no command line).
    static func readPassword() throws -> String {
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            throw SofaError.invalid("give the password on stdin (one line) or with --new-password")
        }
        return line
    }
}

/// `sofa security get|set DB`: a database's security object.
struct SecurityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "security", abstract: "Print or replace a database's security object (CouchDB's admins and members).",
        subcommands: [Get.self, Set.self])

    struct Get: AsyncParsableCommand {
        @Argument var database: String
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let client = try await options.connect()
                defer { client.close() }
                printJSON(try await client.database(database).securityObject().json)
            }
        }
    }

    struct Set: AsyncParsableCommand {
        @Argument var database: String
        @Argument(help: #"The object, e.g. '{"admins":{"names":["ann"]},"members":{"roles":["staff"]}}' (- for stdin)."#)
        var object: String
        @OptionGroup var options: GatewayOptions

        func run() async throws {
            try await reporting {
                let text = object == "-" ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) : object
                let json = try JSON.parse(Array(text.utf8))
                guard json.objectValue != nil else { throw SofaError.invalid("a security object is a JSON object") }
                let client = try await options.connect()
                defer { client.close() }
                let database = client.database(database)
                try await database.setSecurityObject(json: json)
                printJSON(try await database.securityObject().json)
            }
        }
    }
}
