import Foundation
import Logging

/// The log on stderr, in swift-log's `StreamLogHandler` format, formatted
/// only when a message is written. `StreamLogHandler` formats its metadata
/// each time it changes; `sdimage serve`'s framework sets a request id on
/// every request, which cost ~3% of a result-cache hit's CPU even when
/// nothing was logged.
struct StderrLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata = Logger.Metadata()
    var metadataProvider: Logger.MetadataProvider?
    private static let lock = NSLock()  // one line at a time

    init(label: String, level: Logger.Level) {
        self.label = label
        logLevel = level
        metadataProvider = LoggingSystem.metadataProvider
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let explicit = event.metadata { all.merge(explicit) { _, new in new } }
        if let error = event.error {
            all["error.message"] = "\(error)"
            all["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        let pretty = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }.joined(separator: " ")
        let line = "\(Self.timestamp()) \(event.level)\(label.isEmpty ? "" : " ")\(label):\(pretty) [\(event.source)] \(event.message)\n"
        Self.lock.lock()
        defer { Self.lock.unlock() }
        FileHandle.standardError.write(Data(line.utf8))
    }

    private static func timestamp() -> String {
        var now = time(nil)
        var parts = tm()
        guard localtime_r(&now, &parts) != nil else { return "<unknown>" }
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = buffer.withUnsafeMutableBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { strftime($0.baseAddress, $0.count, "%Y-%m-%dT%H:%M:%S%z", &parts) }
        }
        return String(decoding: buffer[..<n], as: UTF8.self)
    }
}
