import Foundation
@testable import SDCache
import Testing

/// A fake /sys/fs/cgroup and /proc/self/cgroup in a temporary folder.
private func fakeCgroup(_ files: [String: String]) throws -> String {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent(
        "sdcache-cgroup-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
    for (path, text) in files {
        let full = root + "/" + path
        try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try text.write(toFile: full, atomically: true, encoding: .utf8)
    }
    return root
}

@Suite("SystemMemory: the cgroup's limit and memory pressure")
struct SystemMemoryTests {
    @Test("Limit files: bytes, v2's max and v1's no-limit value are parsed")
    func parseLimits() {
        #expect(SystemMemory.parseLimit("536870912\n") == 536_870_912)
        #expect(SystemMemory.parseLimit("max\n") == nil)
        #expect(SystemMemory.parseLimit("9223372036854771712\n") == nil)  // v1: no limit
        #expect(SystemMemory.parseLimit("") == nil && SystemMemory.parseLimit("0") == nil)
    }

    @Test("v2: the limit and the pressure file of this process's own cgroup")
    func cgroupV2() throws {
        let root = try fakeCgroup([
            "self": "0::/app.slice/web.service\n",
            "fs/app.slice/web.service/memory.max": "268435456\n",
            "fs/app.slice/web.service/memory.pressure":
                "some avg10=12.50 avg60=3.00 avg300=0.40 total=123456\nfull avg10=1.00 avg60=0.00 avg300=0.00 total=99\n",
        ])
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(SystemMemory.cgroupLimit(root: root + "/fs", selfCgroup: root + "/self") == 256 << 20)
        let psi = SystemMemory.pressureFile(root: root + "/fs", selfCgroup: root + "/self")
        #expect(psi == root + "/fs/app.slice/web.service/memory.pressure")
        #expect(SystemMemory.read(psi!).flatMap(SystemMemory.pressure(fromPSI:)) == 12.5)
    }

    @Test("v2 without a limit, v1 with one, none at all")
    func otherLayouts() throws {
        let v2 = try fakeCgroup(["self": "0::/\n", "fs/memory.max": "max\n"])
        let v1 = try fakeCgroup(["self": "4:memory:/docker/abc\n", "fs/memory/memory.limit_in_bytes": "1073741824\n"])
        let none = try fakeCgroup(["self": "0::/x\n"])
        defer { for r in [v2, v1, none] { try? FileManager.default.removeItem(atPath: r) } }
        #expect(SystemMemory.cgroupLimit(root: v2 + "/fs", selfCgroup: v2 + "/self") == nil)
        #expect(SystemMemory.cgroupLimit(root: v1 + "/fs", selfCgroup: v1 + "/self") == 1 << 30)
        #expect(SystemMemory.cgroupLimit(root: none + "/fs", selfCgroup: none + "/self") == nil)
        #expect(SystemMemory.cgroupV2Directory(root: "/r", selfCgroup: "/nonexistent") == nil)
    }

    @Test("The process limit is at most physical RAM; PSI lines parse")
    func limitAndPressure() {
        #expect(SystemMemory.limit > 0 && SystemMemory.limit <= SystemMemory.physical)
        #expect(SystemMemory.pressure(fromPSI: "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n") == 0)
        #expect(SystemMemory.pressure(fromPSI: "full avg10=5.00 avg60=0.00 avg300=0.00 total=0\n") == nil)
        #expect(SystemMemory.pressure(fromPSI: "garbage") == nil)
    }

    @Test("The monitor calls its handler while pressure is at or over the threshold, not below")
    func monitor() throws {
        let root = try fakeCgroup(["psi": "some avg10=0.50 avg60=0.00 avg300=0.00 total=1\n"])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let calls = Calls()
        let m = MemoryPressureMonitor(file: root + "/psi", threshold: 10, interval: 0.02) { calls.add($0) }
        for _ in 0..<60_000 where m.polls < 2 { usleep(1_000) }  // two looks at the file, however long they take
        #expect(m.polls >= 2 && calls.values.isEmpty)
        try "some avg10=42.00 avg60=1.00 avg300=0.00 total=9\n".write(toFile: root + "/psi", atomically: true, encoding: .utf8)
        for _ in 0..<6000 where calls.values.isEmpty { usleep(10_000) }  // up to a minute: a starved run
        #expect(calls.values.first == 42)
        withExtendedLifetime(m) {}
    }
}

private final class Calls: @unchecked Sendable {
    private let lock = NSLock()
    private var _values: [Double] = []
    func add(_ v: Double) { lock.lock(); _values.append(v); lock.unlock() }
    var values: [Double] { lock.lock(); defer { lock.unlock() }; return _values }
}
