import Foundation
import SDCoders
#if canImport(Glibc)
import Glibc
#endif

/// nginx + the fault server from Tests/Servers, started once per test process
/// on loopback ports; a watchdog in servers.sh stops them when we exit.
final class TestServers: @unchecked Sendable {
    static let shared: TestServers? = try? TestServers()

    let http: String
    let fault: String
    let www: URL

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
        guard let h = values["SD_TEST_HTTP"], let f = values["SD_TEST_FAULT"] else { throw CocoaError(.fileReadCorruptFile) }
        http = h
        fault = f
    }

    static func jpeg(width: Int, height: Int, progressive: Bool) throws -> Data {
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

    func url(_ base: String, _ path: String) -> URL { URL(string: base + path)! }
}
