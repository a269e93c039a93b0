import ArgumentParser
import Foundation

@main
struct SDImageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sdimage",
        abstract: "Fetch, decode, cache and benchmark images with SDWebImage for Linux.",
        subcommands: [Fetch.self, Decode.self, Cache.self, Samples.self, Bench.self])

    /// Exit codes: 0 all ok, 1 some images failed, 2 usage error.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            if exitCode(for: error) == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }
}
