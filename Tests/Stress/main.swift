// SDCacheStress: a child process for the disk-cache crash and sharing tests.
//
//   SDCacheStress write DIR            store entries k0, k1, ... forever (the
//                                      parent kills it with SIGKILL); prints
//                                      "ready" once 200 are stored
//   SDCacheStress hammer DIR SEED N    N random stores/reads/removes over 64
//                                      shared keys; exit 1 if any read is wrong
//   SDCacheStress verify DIR MAX       every entry k0..kMAX present must
//                                      decode to exactly its image; prints
//                                      "entries E"; exit 1 on a bad one
//   SDCacheStress fill DIR             store until the disk is full (a small
//                                      tmpfs): ENOSPC reported, memory serves,
//                                      nothing corrupt, no temporary files
//   SDCacheStress readonly DIR         the same on a read-only mount (EROFS)
//   SDCacheStress populate DIR N       store N entries (before a remount ro)
//   SDCacheStress shared-coder DIR URL a toy coder ("SDTOY" W H, then one
//                                      grey byte) added to the shared coders
//                                      manager decodes URL's download; removed,
//                                      the same download is bad data. Its own
//                                      process: the shared list is global.
//   SDCacheStress svg DIR                  what SVG is here, without the
//                                      SDWebImageSVGCoder product linked
//   SDCacheStress observability DIR URL MISSING
//                                      swift-log and swift-metrics bootstrapped
//                                      with in-memory handlers; URL loaded from
//                                      the network, memory and disk, MISSING
//                                      (a 404); prints every log line and the
//                                      metrics. Its own process: bootstrapping
//                                      is once per process.
import Dispatch
import Foundation
import Logging
import Metrics
import MetricsTestKit
import SDCache
import SDDownloader
import SDWebImage
import SDWebImageTestSupport

/// The image of key `i`: a size and colour only `i` gives.
func expected(_ i: Int) -> (width: Int, height: Int, pixel: UInt32) {
    (8 + i % 13, 8 + i % 7, 0xFF00_0000 | UInt32(i * 2654435761 & 0x00FF_FFFF))
}

func encoded(_ i: Int, big: Bool = false) -> Data {
    let e = expected(i)
    if big {  // 96x96 of noise: ~37 KB that PNG cannot shrink
        var s = UInt32(i + 1) &* 2654435761
        let b = try! Bitmap(width: 96, height: 96) { raw in
            let p = raw.bindMemory(to: UInt32.self)
            for j in 0..<(96 * 96) { s ^= s << 13; s ^= s >> 17; s ^= s << 5; p[j] = 0xFF00_0000 | (s & 0xFF_FFFF) }
        }
        return Data(try! b.pngData())
    }
    let b = try! Bitmap(width: e.width, height: e.height) { raw in
        let p = raw.bindMemory(to: UInt32.self)
        for j in 0..<(e.width * e.height) { p[j] = e.pixel }
    }
    return Data(try! b.pngData())
}

final class ErrorBox: @unchecked Sendable {
    var error: (any Error)?
}

/// nil: fine; else what is wrong.
func check(_ data: Data, _ i: Int) -> String? {
    guard let image = SDImage(data: data) else { return "k\(i): does not decode (\(data.count) bytes)" }
    let e = expected(i)
    guard image.width == e.width, image.height == e.height else { return "k\(i): wrong size" }
    let ok = image.withUnsafeBytes { raw in raw.bindMemory(to: UInt32.self).allSatisfy { $0 == e.pixel } }
    return ok ? nil : "k\(i): wrong pixels"
}

func cacheWithMemory(_ dir: String) -> SDImageCache {
    SDImageCache(namespace: "stress", diskCacheDirectory: dir, config: SDImageCacheConfig())
}

func cache(_ dir: String) -> SDImageCache {
    let config = SDImageCacheConfig()
    config.shouldCacheImagesInMemory = false
    return SDImageCache(namespace: "stress", diskCacheDirectory: dir, config: config)
}

let args = CommandLine.arguments
guard args.count >= 3 else {
    FileHandle.standardError.write(Data("usage: SDCacheStress write|hammer|verify DIR ...\n".utf8))
    exit(2)
}
let c = cache(args[2])
switch args[1] {
case "write":
    var i = 0
    while true {
        try? c.storeImageData(toDisk: encoded(i), forKey: "k\(i)")
        i += 1
        if i == 200 {
            FileHandle.standardOutput.write(Data("ready\n".utf8))  // unbuffered: the parent waits for it
        }
    }
case "hammer":
    var rng = SystemRandomNumberGenerator()
    let n = Int(args[4]) ?? 1000
    var bad = 0
    for _ in 0..<n {
        let i = Int.random(in: 0..<64, using: &rng)
        switch Int.random(in: 0..<10, using: &rng) {
        case 0..<4: try? c.storeImageData(toDisk: encoded(i), forKey: "k\(i)")
        case 4: c.removeImageFromDisk(forKey: "k\(i)")
        default:
            if let d = c.diskImageData(forKey: "k\(i)"), let problem = check(d, i) {
                FileHandle.standardError.write(Data((problem + "\n").utf8))
                bad += 1
            }
        }
    }
    exit(bad == 0 ? 0 : 1)
case "verify":
    let max = Int(args[3]) ?? 0
    var entries = 0, bad = 0
    for i in 0...max {
        guard let d = c.diskImageData(forKey: "k\(i)") else { continue }
        entries += 1
        if let problem = check(d, i) {
            FileHandle.standardError.write(Data((problem + "\n").utf8))
            bad += 1
        }
    }
    FileHandle.standardOutput.write(Data("entries \(entries)\n".utf8))
    exit(bad == 0 ? 0 : 1)
case "fill", "readonly":
    // fill: store until the disk is full; readonly: store on a read-only mount.
    // Either way: the error is reported, memory still serves the image, and
    // every entry on disk still decodes to exactly its image.
    let memCache = cacheWithMemory(args[2])
    var failure: (any Error)?
    var i = 0
    while failure == nil && i < 100_000 {
        let data = encoded(i, big: true)
        let image = SDImage(data: data)!
        let done = DispatchSemaphore(value: 0)
        let box = ErrorBox()
        memCache.store(image, imageData: data, forKey: "k\(i)", cacheType: .all) { e in box.error = e; done.signal() }
        done.wait()
        failure = box.error
        i += 1
    }
    guard let failure else { print("never failed"); exit(1) }
    let disk = failure as? DiskCacheError
    let expected = args[1] == "fill" ? disk?.isDiskFull == true : disk?.code == EROFS
    print("error after \(i - 1) stores: \(failure)")
    var bad = 0, entries = 0
    if memCache.imageFromMemoryCache(forKey: "k\(i - 1)") == nil { print("memory lost the image"); bad += 1 }
    for j in 0..<max(i, 64) {
        guard let d = memCache.diskImageData(forKey: "k\(j)") else { continue }
        entries += 1
        if d != encoded(j, big: true) { print("k\(j) corrupt"); bad += 1 }
    }
    let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: memCache.diskCachePath))?
        .filter { $0.hasPrefix(".tmp-") }.count ?? 0
    if leftovers > 0 { print("\(leftovers) temporary files left"); bad += 1 }
    print("entries \(entries)")
    exit(expected && bad == 0 ? 0 : 1)
case "populate":
    let n = Int(args[3]) ?? 10
    for i in 0..<n { try? c.storeImageData(toDisk: encoded(i, big: true), forKey: "k\(i)") }
    exit(0)
case "shared-coder":
    makeDefaultsPatient()  // before the shared downloader is first used: it copies the defaults then
    final class ToyCoder: SDImageCoder, @unchecked Sendable {
        func canDecode(from data: Data?) -> Bool { data?.starts(with: Array("SDTOY".utf8)) ?? false }
        func decodedImage(with data: Data?, options: SDImageCoderOptions?) -> SDImage? {
            guard let d = data.map(Array.init), d.count >= 8, canDecode(from: data) else { return nil }
            let (w, h, grey) = (Int(d[5]), Int(d[6]), UInt32(d[7]))
            return (try? Bitmap(width: w, height: h) { raw in
                let p = raw.bindMemory(to: UInt32.self)
                for i in 0..<(w * h) { p[i] = 0xFF00_0000 | grey << 16 | grey << 8 | grey }
            }).map { SDImage(bitmap: $0) }
        }
        func canEncode(to format: SDImageFormat) -> Bool { false }
        func encodedData(with image: SDImage?, format: SDImageFormat, options: SDImageCoderOptions?) -> Data? { nil }
    }
    func load(_ url: URL) -> String {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var line = ""
        SDWebImageDownloader.shared.downloadImage(with: url, options: [], context: nil, progress: nil) { image, _, error, _ in  // patience: the shared downloader under test, made patient above
            line = image.map { i in
                let p = i.withUnsafeBytes { $0.load(as: UInt32.self) }
                return "image \(i.width)x\(i.height) \(String(p, radix: 16))"
            }
                ?? "error \((error as? SDWebImageError)?.code.rawValue ?? -1)"
            done.signal()
        }
        done.wait()
        return line
    }
    let url = URL(string: args[3])!
    let toy = ToyCoder()
    SDImageCodersManager.shared.addCoder(toy)
    print(load(url))
    SDImageCodersManager.shared.removeCoder(toy)
    print(load(URL(string: args[3] + "?again")!))
    exit(0)
case "svg":
    // This binary does not link SDWebImageSVGCoder: SVG is recognised, not decoded.
    let svg = Data(#"<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>"#.utf8)
    print("svg decode capability: \(ImageFormat.svg.capabilities.contains(.decode))")
    print("sniffed: \(ImageFormat(data: svg))")
    do {
        _ = try ImageDecoder.decode(Array(svg))
        print("decoded")
    } catch {
        print("error: \(error)")
    }
    exit(0)
case "observability":
    final class Lines: @unchecked Sendable {
        let lock = NSLock()
        var all: [String] = []
        func add(_ s: String) { lock.lock(); all.append(s); lock.unlock() }
    }
    struct MemoryLog: LogHandler {
        let label: String
        let lines: Lines
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let (level, message) = (event.level, event.message)
            let m = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            lines.add("log \(label) \(level) \(message) \(m)")
        }
    }
    let lines = Lines()
    LoggingSystem.bootstrap { MemoryLog(label: $0, lines: lines) }
    let metrics = TestMetrics()
    MetricsSystem.bootstrap(metrics)
    // a manager and downloader made with no logger: the library's default prints nothing
    let quiet = SDWebImageManager(cache: cacheWithMemory(args[2] + "-quiet"), loader: patientDownloader())
    do {
        let done = DispatchSemaphore(value: 0)
        quiet.loadImage(with: URL(string: args[4] + "&quiet")!, options: [], context: nil, progress: nil) { _, _, _, _, finished, _ in
            if finished { done.signal() }
        }
        done.wait()
        Telemetry.queue.sync {}
        print("quiet lines \(lines.all.count)")
    }
    // the instances this test logs: the application's loggers, given per instance
    SDWebImageDownloader.coreLogger = Logger(label: "sdwebimage.core")
    let imageCache = cacheWithMemory(args[2])
    let dconfig = SDWebImageDownloaderConfig()
    dconfig.logger = Logger(label: "sdwebimage.downloader")
    dconfig.metricsDimensions = [("instance", "obs")]
    let m = SDWebImageManager(cache: imageCache, loader: patientDownloader(dconfig),
                              logger: Logger(label: "sdwebimage.manager"), metricsDimensions: [("instance", "obs")])
    func load(_ s: String) {
        let done = DispatchSemaphore(value: 0)
        m.loadImage(with: URL(string: s)!, options: [.waitStoreCache], context: nil, progress: nil) { _, _, _, _, finished, _ in
            if finished { done.signal() }
        }
        done.wait()
    }
    load(args[3])  // network
    load(args[3])  // memory
    imageCache.clearMemory()
    load(args[3])  // disk
    load(args[4])  // 404
    Telemetry.queue.sync {}  // what was recorded has arrived
    for l in lines.all { print(l) }
    func counter(_ label: String, _ dims: [(String, String)] = []) -> Int64 {
        (try? metrics.expectCounter(label, [("instance", "obs")] + dims).totalValue) ?? -1
    }
    print("metric downloads \(counter("sdwebimage_downloads_total"))")
    print("metric bytes \(counter("sdwebimage_download_bytes_total"))")
    print("metric errors.http_status \(counter("sdwebimage_download_errors_total", [("kind", "http_status")]))")
    print("metric hits.memory \(counter("sdwebimage_cache_hits_total", [("tier", "memory")]))")
    print("metric hits.disk \(counter("sdwebimage_cache_hits_total", [("tier", "disk")]))")
    print("metric misses \(counter("sdwebimage_cache_misses_total"))")
    print("metric download_timer \((try? metrics.expectTimer("sdwebimage_download_duration_seconds", [("instance", "obs")]).values.count) ?? -1)")
    print("metric decode_timer \((try? metrics.expectTimer("sdwebimage_decode_duration_seconds", [("instance", "obs")]).values.count) ?? -1)")
    let gauge = (try? metrics.expectGauge("sdwebimage_downloads_in_flight", [("instance", "obs")]).lastValue) ?? nil
    print("metric in_flight \(gauge.map { Int($0) } ?? -1)")
    exit(0)
default:
    exit(2)
}
