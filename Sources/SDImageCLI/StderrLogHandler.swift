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
        // one event, one line: what a request or an origin sent (a host
        // decoded from %0A, a header) cannot start a forged line
        let text = Self.escaped("\(label.isEmpty ? "" : " ")\(label):\(pretty) [\(event.source)] \(event.message)")
        let line = "\(Self.timestamp()) \(event.level)\(text)\n"
        Self.lock.lock()
        defer { Self.lock.unlock() }
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// Control characters (CR, LF, ESC, DEL, C1 …) as `\n`, `\r`, `\t` or `\u{XX}`; a backslash doubled.
    static func escaped(_ s: String) -> String {
        guard s.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\\" }) else {
            return s
        }
        var out = String.UnicodeScalarView()
        for c in s.unicodeScalars {
            switch c {
            case "\n": out.append(contentsOf: "\\n".unicodeScalars)
            case "\r": out.append(contentsOf: "\\r".unicodeScalars)
            case "\t": out.append(contentsOf: "\\t".unicodeScalars)
            case "\\": out.append(contentsOf: "\\\\".unicodeScalars)
            case _ where c.value < 0x20 || (0x7F...0x9F).contains(c.value):
                out.append(contentsOf: "\\u{\(String(c.value, radix: 16))}".unicodeScalars)
            default: out.append(c)
            }
        }
        return String(out)
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
