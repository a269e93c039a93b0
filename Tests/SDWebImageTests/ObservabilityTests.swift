import Foundation
import SDTestSupport
import Testing

/// swift-log and swift-metrics, bootstrapped with in-memory handlers in a
/// child process (bootstrapping is once per process, and other tests run
/// beside these): a load's log lines, the C core's diagnostic bridged
/// through its log callback, and the metrics of network, memory, disk and
/// failed loads.
@Suite("Logging and metrics (swift-log, swift-metrics)")
struct ObservabilityTests {
    @Test("A load's log lines, a C-core diagnostic, and the metrics of network, memory, disk and 404 loads")
    func logsAndMetrics() throws {
        let s = try #require(TestServers.shared)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sd-obs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = s.url(s.http, "/img/small.jpg?obs").absoluteString
        let missing = s.url(s.http, "/img/none.jpg?obs").absoluteString
        let child = try Child.start(["observability", dir.path, url, missing])
        let out = child.output()
        #expect(child.wait() == 0)
        let lines = out.split(separator: "\n").map(String.init)
        func has(_ parts: String...) -> Bool { lines.contains { l in parts.allSatisfy { l.contains($0) } } }
        // the downloader: a success at trace, the 404 at debug with its kind
        #expect(has("log sdwebimage.downloader trace downloaded", "url=\(url)", "status=200"))
        #expect(has("log sdwebimage.downloader debug download failed", "kind=http_status", "url=\(missing)"))
        // the C core's own diagnostic, through sd_set_log_callback
        #expect(has("log sdwebimage.core trace transfer", "none.jpg?obs", "failed"))
        // the manager: where each load's image came from
        #expect(has("log sdwebimage.manager trace load done", "source=network"))
        #expect(has("log sdwebimage.manager trace load done", "source=memory"))
        #expect(has("log sdwebimage.manager trace load done", "source=disk"))
        #expect(has("log sdwebimage.manager debug load failed", "none.jpg?obs"))
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
