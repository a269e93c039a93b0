import Foundation
import SDDownloader

/// The test suite's one patient configuration: the timeouts every download,
/// loader, manager and cache a test builds uses unless the test is about a
/// timeout. A test never depends on the clock running at a normal speed; on a
/// CI machine loaded far beyond its cores a loopback transfer of a few
/// kilobytes has been seen to take 20 s, so these outlast any starved step
/// and only end a run that is broken anyway.
///
/// A test of a timeout builds its own short-timeout object and says so on
/// that line with `// patience: <why>`; `scripts/check-test-patience.py`
/// (run by `make test`) refuses any other default-timeout constructor in
/// Tests/.
public enum Patience {
    /// Idle timeout: no byte for this long (the library's default is 15 s).
    public static let idle: TimeInterval = 900
    /// Whole-transfer timeout: none (the library's default is 120 s).
    public static let total: TimeInterval = 0
    /// Connect timeout (the library's default is 10 s).
    public static let connect: TimeInterval = 120
    /// A wait on another process or thread (a lease, a Redis reply).
    public static let wait: TimeInterval = 600
}

extension DownloadRequest {
    /// A request with the suite's patient timeouts (`Patience`).
    public static func patient(_ url: URL) -> DownloadRequest {
        var r = DownloadRequest(url: url)  // patience: the helper itself
        r.timeout = Patience.idle
        r.totalTimeout = Patience.total
        r.connectTimeout = Patience.connect
        return r
    }
}
