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
import Foundation
import SDWebImage

/// The image of key `i`: a size and colour only `i` gives.
func expected(_ i: Int) -> (width: Int, height: Int, pixel: UInt32) {
    (8 + i % 13, 8 + i % 7, 0xFF00_0000 | UInt32(i * 2654435761 & 0x00FF_FFFF))
}

func encoded(_ i: Int) -> Data {
    let e = expected(i)
    let b = try! Bitmap(width: e.width, height: e.height) { raw in
        let p = raw.bindMemory(to: UInt32.self)
        for j in 0..<(e.width * e.height) { p[j] = e.pixel }
    }
    return Data(try! b.pngData())
}

/// nil: fine; else what is wrong.
func check(_ data: Data, _ i: Int) -> String? {
    guard let image = SDImage(data: data) else { return "k\(i): does not decode (\(data.count) bytes)" }
    let e = expected(i)
    guard image.width == e.width, image.height == e.height else { return "k\(i): wrong size" }
    let ok = image.withUnsafeBytes { raw in raw.bindMemory(to: UInt32.self).allSatisfy { $0 == e.pixel } }
    return ok ? nil : "k\(i): wrong pixels"
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
default:
    exit(2)
}
