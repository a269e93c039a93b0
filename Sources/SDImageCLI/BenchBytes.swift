import ArgumentParser
import Dispatch
import Foundation
import SDCoders
import SDDownloader
import SDSync

/// `sdimage bench bytes`: thumbnails from part of a file. For every
/// progressive JPEG of `--dir` (served by `--origin` under the same names)
/// and every box at shrink margins 2 (the default) and 1: the bytes the
/// transfer took before the thumbnail settled (`endsWhenSettled`) against
/// the file's length, and the thumbnail's PSNR against the whole file's
/// (the same plan, decoded here from the file). Then the time to a grid of
/// thumbnails, whole files against early ends, interleaved, the median of
/// three. `scripts/bench-bytes.sh` runs it against an origin behind a shaped
/// link (10 Mbit/s, 40 ms to the first byte) in a network namespace.
struct BenchBytes: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bytes",
        abstract: "Thumbnails from part of a file: bytes fetched, PSNR against the whole file's thumbnail, a grid's load time (make bench-bytes).")

    @Option(help: "Folder of progressive JPEGs; their names' first word (before '-') groups the rows.")
    var dir: String

    @Option(help: "The origin's base URL serving --dir's files under the same names.")
    var origin: String

    @Option(help: "Thumbnail boxes (repeat the option).")
    var box: [Int] = [256, 512]

    @Option(help: "Thumbnails in the timed grid (0: no grid).")
    var grid = 48

    @Option(help: "The grid's shrink margin (its box is 256 px).")
    var gridMargin = 1

    @Option(help: "The tolerance, levels (DecodeOptions.settleLevels).")
    var settleLevels = 1

    @Flag(help: "One JSON object.")
    var json = false

    struct Row {
        var group = "", box = 0, margin = 0, files = 0, early = 0
        var fetched = 0, whole = 0
        var minPSNR = Double.infinity
        /// The early-ended files loaded again at full size: bytes that took, and what was left of them.
        var rest = 0, restLeft = 0
    }

    func run() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".jpg") }.sorted()
        guard !names.isEmpty else { throw ValidationError("no .jpg in \(dir)") }
        let loader = try DataLoader(maxConcurrentDownloads: 6)
        var rows: [Row] = []
        for b in box {
            for margin in [2, 1] {
                var byGroup: [String: Row] = [:]
                for name in names {
                    let group = String(name.split(separator: "-").first ?? "all")
                    var row = byGroup[group] ?? Row(group: group, box: b, margin: margin)
                    let file = try Data(contentsOf: URL(fileURLWithPath: dir).appendingPathComponent(name))
                    let options = Self.options(box: b, margin: margin)
                    let r = try Self.load(loader, url: origin + "/" + name, options: options, early: true, levels: settleLevels)
                    guard let image = r.image else { throw ValidationError("\(name): no image") }
                    let whole = try ImageDecoder.decode([UInt8](file), options: options)
                    row.files += 1
                    row.fetched += r.metrics.bytes
                    row.whole += file.count
                    if r.metrics.endedEarly { row.early += 1 }
                    row.minPSNR = min(row.minPSNR, Self.psnr(image.bitmap, whole.bitmap))
                    // a later full-size load of the same file: the rest only (Range + If-Range)
                    if r.metrics.endedEarly, let resumable = r.resumable {
                        var full = Self.request(origin + "/" + name, options: DecodeOptions(), early: false, levels: 0)
                        full.resume = resumable
                        let done = DispatchSemaphore(value: 0)
                        let out = Locked<Result<DownloadResult, DownloadError>?>(nil)
                        loader.load(full) { out.set($0); done.signal() }
                        done.wait()
                        guard case .success(let f)? = out.current, f.data == file else { throw ValidationError("\(name): the rest did not make the file") }
                        row.rest += f.metrics.bytes
                        row.restLeft += file.count - r.metrics.bytes
                    }
                    byGroup[group] = row
                }
                rows += byGroup.values.sorted { $0.group < $1.group }
            }
        }
        var timing: (whole: Double, early: Double)?
        if grid > 0 {
            let urls = (0..<grid).map { origin + "/" + names[$0 % names.count] }
            var w: [Double] = [], e: [Double] = []
            for _ in 0..<3 {
                w.append(try Self.grid(loader, urls, margin: gridMargin, early: false, levels: settleLevels))
                e.append(try Self.grid(loader, urls, margin: gridMargin, early: true, levels: settleLevels))
            }
            timing = (w.sorted()[1], e.sorted()[1])
        }
        report(rows, timing)
    }

    static func options(box: Int, margin: Int) -> DecodeOptions {
        var o = DecodeOptions.thumbnail(maxPixelSize: box)
        o.resampling.shrinkOnLoadMargin = margin
        return o
    }

    static func request(_ url: String, options: DecodeOptions, early: Bool, levels: Int) -> DownloadRequest {
        var r = DownloadRequest(url: URL(string: url)!)
        r.timeout = 120  // the shaped link: never the clock
        r.totalTimeout = 0
        r.decodeOptions = options
        r.endsWhenSettled = early
        if early { r.decodeOptions.settleLevels = levels }
        return r
    }

    static func load(_ loader: DataLoader, url: String, options: DecodeOptions, early: Bool, levels: Int) throws -> DownloadResult {
        let done = DispatchSemaphore(value: 0)
        let out = Locked<Result<DownloadResult, DownloadError>?>(nil)
        loader.load(request(url, options: options, early: early, levels: levels)) { r in
            out.set(r)
            done.signal()
        }
        done.wait()
        switch out.current! {
        case .success(let r): return r
        case .failure(let e): throw ValidationError("\(url): \(e)")
        }
    }

    /// Seconds to every thumbnail of `urls` (256 px at `margin`), all at once.
    static func grid(_ loader: DataLoader, _ urls: [String], margin: Int, early: Bool, levels: Int) throws -> Double {
        let group = DispatchGroup()
        let failed = Locked(0)
        let t0 = DispatchTime.now().uptimeNanoseconds
        for u in urls {
            group.enter()
            loader.load(request(u, options: options(box: 256, margin: margin), early: early, levels: levels)) { r in
                if case .failure = r { failed.withLock { $0 += 1 } }
                group.leave()
            }
        }
        group.wait()
        guard failed.current == 0 else { throw ValidationError("\(failed.current) grid loads failed") }
        return Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
    }

    static func psnr(_ a: Bitmap, _ b: Bitmap) -> Double {
        guard a.width == b.width, a.height == b.height else { return 0 }
        var se = 0.0
        a.withUnsafeBytes { p in
            b.withUnsafeBytes { q in
                for y in 0..<a.height {
                    for x in 0..<(a.width * 4) {
                        let d = Double(Int(p[y * a.bytesPerRow + x]) - Int(q[y * b.bytesPerRow + x]))
                        se += d * d
                    }
                }
            }
        }
        return se == 0 ? .infinity : 10 * log10(255 * 255 * Double(a.width * a.height * 4) / se)
    }

    func report(_ rows: [Row], _ timing: (whole: Double, early: Double)?) {
        func db(_ v: Double) -> String { v.isInfinite ? "exact" : String(format: "%.1f", v) }
        if json {
            var out: [String: Any] = ["settle_levels": settleLevels]
            out["rows"] = rows.map {
                ["group": $0.group, "box": $0.box, "margin": $0.margin, "files": $0.files, "ended_early": $0.early,
                 "bytes_fetched": $0.fetched, "bytes_whole": $0.whole,
                 "fetched_share": Double($0.fetched) / Double(max(1, $0.whole)),
                 "rest_bytes": $0.rest, "rest_left_bytes": $0.restLeft,
                 "min_psnr_db": $0.minPSNR.isInfinite ? 999 : $0.minPSNR] as [String: Any]
            }
            if let t = timing {
                out["grid"] = ["thumbnails": grid, "margin": gridMargin, "whole_s": t.whole, "early_s": t.early, "speedup": t.whole / t.early]
            }
            if let d = try? JSONSerialization.data(withJSONObject: out, options: [.sortedKeys]) { print(String(decoding: d, as: UTF8.self)) }
            return
        }
        print("thumbnails from part of a file (settle levels \(settleLevels)): bytes fetched of the whole files, min PSNR against the whole file's thumbnail")
        print("group      box margin files early   fetched   of whole  min PSNR (dB)  then full size: bytes (the rest)")
        for r in rows {
            print(r.group.padding(toLength: 9, withPad: " ", startingAt: 0)
                  + String(format: " %4d %6d %5d %5d %9d %9.1f%%  ", r.box, r.margin, r.files, r.early,
                           r.fetched, 100 * Double(r.fetched) / Double(max(1, r.whole))) + db(r.minPSNR).padding(toLength: 15, withPad: " ", startingAt: 0)
                  + (r.early > 0 ? "\(r.rest) (\(r.restLeft))" : "-"))
        }
        if let t = timing {
            print(String(format: "grid of %d thumbnails (256 px, margin %d), median of 3: whole files %.2f s, early ends %.2f s: %.2fx",
                         grid, gridMargin, t.whole, t.early, t.whole / t.early))
        }
    }
}
