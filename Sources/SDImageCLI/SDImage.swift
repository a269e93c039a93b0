import ArgumentParser
import Foundation
import Logging
import SDWebImage

@main
struct SDImageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sdimage",
        abstract: "Fetch, decode, cache and benchmark images with SDWebImage for Linux.",
        discussion: """
            Exit codes: 0 everything asked for worked; 1 some image or file failed \
            (each on stderr, one line); 2 a usage error. Results go to stdout, \
            errors and the library's log to stderr (level: SDIMAGE_LOG_LEVEL = \
            trace, debug, info, notice, warning (default), error).
            """,
        version: SDWebImageVersion.string,
        subcommands: [Fetch.self, Decode.self, Cache.self, Samples.self, Bench.self, Serve.self])

    /// Exit codes: 0 all ok, 1 some images failed, 2 usage error.
    /// The library's log goes to stderr (stdout is the tool's output), at
    /// `SDIMAGE_LOG_LEVEL` (trace, debug, info, notice, warning, error;
    /// default warning).
    static func main() {
        // started by a decoder pool (serve --isolate-decoders) as one of its
        // sandboxed workers: it decodes and exits there
        DecoderIsolation.runWorkerIfAsked()
        let level = ProcessInfo.processInfo.environment["SDIMAGE_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
            ?? .warning
        LoggingSystem.bootstrap { label in StderrLogHandler(label: label, level: level) }
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
