import Foundation
import SDCoders
@testable import SDWebImage
import SDTestSupport
import Testing

@Suite("An animated image's frame source keeps only its working canvas")
struct FrameSourceTests {
    @Test("Through a download and a cache read: no C frame cache unless the decode options name one")
    func noFrameCacheByDefault() async throws {
        let s = try #require(TestServers.shared)
        let row = try #require(AnimRow.load().first { $0.format == "gif" && $0.frames >= 3 })
        try FileManager.default.createDirectory(at: s.www.appendingPathComponent("anim"), withIntermediateDirectories: true)
        try Data(contentsOf: URL(fileURLWithPath: corpusAnim + "/" + row.file))
            .write(to: s.www.appendingPathComponent("anim/source.gif"))
        let url = s.url(s.http, "/anim/source.gif")
        let (m, cache) = makeManager()
        let net = try #require(await m.load(url).last?.image as? SDAnimatedImage)
        #expect((net.animatedCoder as? SDImageCoreCoder)?.frameCacheBytes == 0)
        cache.waitForPendingWrites()
        cache.clearMemory()
        let disk = try #require(await m.load(url).last?.image as? SDAnimatedImage)
        #expect((disk.animatedCoder as? SDImageCoreCoder)?.frameCacheBytes == 0)
        var core = DecodeOptions()
        core.frameCacheBytes = 1 << 20
        let (m2, _) = makeManager()
        let asked = try #require(await m2.load(url, [], [.imageDecodeOptions: [SDImageCoderOption.decodeCoreOptions: core]
                                                          as SDImageCoderOptions]).last?.image as? SDAnimatedImage)
        #expect((asked.animatedCoder as? SDImageCoreCoder)?.frameCacheBytes == 1 << 20)
    }

    @Test("The player's automatic buffer is an eighth of MemAvailable, at most 128 MiB")
    func automaticBudget() throws {
        let info = try String(contentsOfFile: "/proc/meminfo", encoding: .utf8)
        let line = try #require(info.split(separator: "\n").first { $0.hasPrefix("MemAvailable:") })
        let available = try #require(Int(line.split(separator: " ")[1])) * 1024
        let budget = SDAnimatedImagePlayer.automaticBudget
        #expect(budget > 0 && budget <= 128 << 20)
        // read once at start-up: within a tenth of what is available now
        #expect(budget == 128 << 20 || abs(budget - available / 8) < available / 80)
    }
}
