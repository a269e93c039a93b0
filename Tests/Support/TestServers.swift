import Foundation
import SDCoders
#if canImport(Glibc)
import Glibc
#endif

/// nginx + the fault server from Tests/Servers, started once per test process
/// on loopback ports; a watchdog in servers.sh stops them when we exit.
public final class TestServers: @unchecked Sendable {
    public static let shared: TestServers? = try? TestServers()

    public let http: String
    public let https: String
    public let fault: String
    public let www: URL

    private init() throws {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sddl-\(getpid())")
        try? FileManager.default.removeItem(at: dir)
        www = dir.appendingPathComponent("www")
        let img = www.appendingPathComponent("img")
        try FileManager.default.createDirectory(at: img, withIntermediateDirectories: true)
        try Self.jpeg(width: 64, height: 48, progressive: false).write(to: img.appendingPathComponent("small.jpg"))
        try Self.jpeg(width: 320, height: 240, progressive: true).write(to: img.appendingPathComponent("prog.jpg"))
        for i in 0..<8 {
            try Self.jpeg(width: 16 + i, height: 16, progressive: false)
                .write(to: img.appendingPathComponent("n\(i).jpg"))
        }
        try Self.jpeg(width: 1000, height: 750, progressive: false).write(to: img.appendingPathComponent("big.jpg"))
        try Self.jpeg(width: 40, height: 30, progressive: false).write(to: img.appendingPathComponent("small@2x.jpg"))
        try Self.png(width: 50, height: 50).write(to: img.appendingPathComponent("alpha.png"))
        try Data().write(to: img.appendingPathComponent("empty.jpg"))
        try Self.zeroHeight(Self.jpeg(width: 8, height: 8, progressive: false))
            .write(to: img.appendingPathComponent("zero.jpg"))
        // a photograph as a progressive JPEG whose first scans hold the DC and
        // the chroma whole (mozjpeg's kind of script): a thumbnail of it
        // settles early (the fault server's /drip-file holds the rest)
        let trickle = www.appendingPathComponent("trickle")
        try FileManager.default.createDirectory(at: trickle, withIntermediateDirectories: true)
        let scans = dir.appendingPathComponent("scans.txt")
        try "0 1 2: 0 0 0 0;\n1: 1 63 0 0;\n2: 1 63 0 0;\n0: 1 5 0 1;\n0: 6 63 0 1;\n0: 1 63 1 0;\n"
            .write(to: scans, atomically: true, encoding: .utf8)
        let photo = repo.deletingLastPathComponent().appendingPathComponent("shared/corpus/exif-orientation/Landscape_1.jpg")
        _ = system("djpeg '\(photo.path)' | cjpeg -quality 85 -scans '\(scans.path)' -outfile '\(trickle.path)/settle.jpg'")
        // grey, libjpeg's own script: its first scan holds the DC less one
        // bit, enough for a thumbnail within a level (the exact rule needs
        // the DC refinement, past half the file)
        _ = system("djpeg '\(photo.path)' | cjpeg -quality 85 -grayscale -progressive -outfile '\(trickle.path)/grey.jpg'")
        // system(), not Process: Foundation's waitUntilExit can miss the exit
        // of a child that leaves background processes behind.
        let script = repo.appendingPathComponent("Tests/Servers/servers.sh").path
        guard system("bash '\(script)' start '\(dir.path)' \(getpid())") == 0 else {
            throw CocoaError(.executableLoad)
        }
        let env = try String(contentsOf: dir.appendingPathComponent("env"), encoding: .utf8)
        var values: [String: String] = [:]
        for line in env.split(separator: "\n") {
            let kv = line.split(separator: "=", maxSplits: 1)
            if kv.count == 2 { values[String(kv[0])] = String(kv[1]) }
        }
        guard let h = values["SD_TEST_HTTP"], let f = values["SD_TEST_FAULT"], let t = values["SD_TEST_HTTPS"] else {
            throw CocoaError(.fileReadCorruptFile)
        }
        http = h
        https = t
        fault = f
    }

    /// A 50x50 PNG with a transparent left half.
    public static func png(width: Int, height: Int) throws -> Data {
        let bitmap = try Bitmap(width: width, height: height) { buf in
            for i in stride(from: 0, to: buf.count, by: 4) where (i / 4) % width >= width / 2 {
                buf[i] = 200; buf[i + 1] = 100; buf[i + 2] = 50; buf[i + 3] = 255
            }
        }
        return Data(try bitmap.pngData())
    }

    /// The JPEG with its frame height patched to 0 (a zero-pixel image).
    static func zeroHeight(_ jpeg: Data) -> Data {
        var d = jpeg
        var i = 2
        while i + 8 < d.count {
            let marker = d[i + 1]
            let len = Int(d[i + 2]) << 8 | Int(d[i + 3])
            if marker == 0xC0 || marker == 0xC2 {
                d[i + 5] = 0
                d[i + 6] = 0
                break
            }
            i += 2 + len
        }
        return d
    }
    public static func jpeg(width: Int, height: Int, progressive: Bool) throws -> Data {
        let bitmap = try Bitmap(width: width, height: height) { buf in
            for i in stride(from: 0, to: buf.count, by: 4) {
                let x = (i / 4) % width, y = (i / 4) / width
                buf[i] = UInt8(x * 255 / width)          // B
                buf[i + 1] = UInt8(y * 255 / height)     // G
                buf[i + 2] = UInt8((x ^ y) & 0xFF)       // R
                buf[i + 3] = 255
            }
        }
        return Data(try bitmap.jpegData(quality: 85, progressive: progressive))
    }

    public func url(_ base: String, _ path: String) -> URL { URL(string: base + path)! }

    /// The body bytes the fault server's `/drip-file?…&id=<id>` wrote so far.
    public func faultSent(_ id: String) -> Int { Int(faultGet("/sent?id=\(id)") ?? "") ?? -1 }

    /// After a transfer that ended early: waits until no `/drip-file` for
    /// `id` runs (one held at its gate ends by itself once its client has
    /// closed), then opens the gate `id` — so the held half never goes into
    /// a connection that was still closing (a starved loop closes it late).
    public func faultEnded(_ id: String) {
        _ = faultGet("/idle?id=\(id)")
        _ = faultGet("/open?gate=\(id)")
    }

    /// How many requests the fault server's `/flaky?id=<id>` has had.
    public func flakyHits(_ id: String) -> Int { Int(faultGet("/hits?id=\(id)") ?? "") ?? -1 }

    /// The range starts `/resumable?id=<id>` was asked for.
    public func resumedRanges(_ id: String) -> [Int] {
        (faultGet("/ranges?id=\(id)") ?? "").split(separator: ",").compactMap { Int($0) }
    }

    /// The body of a GET to the fault server (a plain blocking request on a
    /// socket: no library under test on the way).
    public func faultGet(_ path: String) -> String? {
        guard let u = URL(string: fault), let port = u.port else { return nil }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard ok == 0 else { return nil }
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        _ = request.withCString { send(fd, $0, strlen($0), 0) }
        var reply = [UInt8]()
        var buf = [UInt8](repeating: 0, count: 512)
        while true {
            let n = recv(fd, &buf, buf.count, 0)
            if n <= 0 { break }
            reply += buf[0..<n]
        }
        let text = String(decoding: reply, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 200"), let body = text.components(separatedBy: "\r\n\r\n").last else { return nil }
        return body.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
