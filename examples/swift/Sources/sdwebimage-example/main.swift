// sdwebimage-example URL [URL...]: load each image through SDWebImageManager
// (a cache of its own in a temporary folder), twice: from the network, then
// from memory. Prints one line per image and exits 1 if any failed.
import Foundation
import SDWebImage

let urls = CommandLine.arguments.dropFirst().compactMap(URL.init(string:))
guard !urls.isEmpty else {
    FileHandle.standardError.write(Data("usage: sdwebimage-example URL [URL...]\n".utf8))
    exit(2)
}
let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sdwebimage-example-\(getpid())").path
let cache = SDImageCache(namespace: "example", diskCacheDirectory: folder)
let manager = SDWebImageManager(cache: cache, loader: SDWebImageDownloader())
defer { try? FileManager.default.removeItem(atPath: folder) }

var failed = false
for pass in 1...2 {
    for url in urls {
        do {
            let result = try await manager.loadImage(with: url, context: [.imageThumbnailPixelSize: CGSize(width: 256, height: 256)])
            let image = result.image!
            print("\(url.lastPathComponent) \(image.width)x\(image.height) \(result.cacheType == .none ? "network" : result.cacheType == .memory ? "memory" : "disk") pass \(pass)")
        } catch {
            print("\(url.lastPathComponent) failed: \(error)")
            failed = true
        }
    }
}
exit(failed ? 1 : 0)
