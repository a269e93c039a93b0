import Foundation
import SDTestSupport
import Testing

/// swift-log and swift-metrics, bootstrapped with in-memory handlers in a
/// child process (bootstrapping is once per process, and other tests run
/// beside these): a load's log lines, the C core's diagnostic bridged
/// through its log callback, and the metrics of network, memory, disk and
/// failed loads. The URLs carry a password and a signed query: no line may.
/// The loggers are the application's, given per instance (swift-log's advice
/// for libraries); an instance made without one prints nothing, and the
/// metrics carry each instance's dimensions.
@Suite("Logging and metrics (swift-log, swift-metrics)")
struct ObservabilityTests {
    @Test("A load's log lines (credentials in its URL redacted), a C-core diagnostic, and the metrics of network, memory, disk and 404 loads")
    func logsAndMetrics() throws {
        let s = try #require(TestServers.shared)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sd-obs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        // credentials in the user info and the query, which no line may carry
        func secret(_ path: String) -> String {
            s.url(s.http, path + "?obs=1&sig=s3cr3t").absoluteString.replacingOccurrences(of: "http://", with: "http://user:hunter2@")
        }
        let url = secret("/img/small.jpg"), missing = secret("/img/none.jpg")
        let shown = s.url(s.http, "/img/small.jpg?obs=***&sig=***").absoluteString.replacingOccurrences(of: "http://", with: "http://***@")
        let shownMissing = shown.replacingOccurrences(of: "small.jpg", with: "none.jpg")
        let child = try Child.start(["observability", dir.path, url, missing])
        let out = child.output()
        #expect(child.wait() == 0)
        let lines = out.split(separator: "\n").map(String.init)
        func has(_ parts: String...) -> Bool { lines.contains { l in parts.allSatisfy { l.contains($0) } } }
        // a manager and downloader made without a logger print nothing (a failed load among it)
        #expect(lines.contains("quiet lines 0"), "\(lines.prefix(5))")
        // the downloader: a success at trace, the 404 at debug with its kind
        #expect(has("log sdwebimage.downloader trace downloaded", "url=\(shown)", "status=200"))
        #expect(has("log sdwebimage.downloader debug download failed", "kind=http_status", "url=\(shownMissing)"))
        // the C core's own diagnostic, through sd_set_log_callback
        #expect(has("log sdwebimage.core trace transfer", shownMissing, "failed"))
        // the manager: where each load's image came from
        #expect(has("log sdwebimage.manager trace load done", "source=network"))
        #expect(has("log sdwebimage.manager trace load done", "source=memory"))
        #expect(has("log sdwebimage.manager trace load done", "source=disk"))
        #expect(has("log sdwebimage.manager debug load failed", "key=\(shownMissing)"))
        #expect(!lines.contains { $0.contains("hunter2") || $0.contains("s3cr3t") })
        func metric(_ name: String) -> Int64? {
            lines.first { $0.hasPrefix("metric \(name) ") }.flatMap { Int64($0.split(separator: " ")[2]) }
        }
        #expect(metric("downloads") == 2)
        #expect((metric("bytes") ?? 0) > 0)
        #expect(metric("errors.http_status") == 1)
        #expect(metric("hits.memory") == 1 && metric("hits.disk") == 1 && metric("misses") == 2)
        #expect(metric("download_timer") == 1 && metric("decode_timer") == 1)
        #expect(metric("in_flight") == 0)
    }
}
