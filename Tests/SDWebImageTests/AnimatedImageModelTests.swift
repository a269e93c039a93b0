import Foundation
import SDWebImage
import Testing

@Suite("The frame model of SDImage (SDImageFrame, SDAnimatedImageProvider)")
struct AnimatedImageModelTests {
    @Test("Frames in memory make an animated image: count, loop, durations, frames, cost")
    func framesInMemory() throws {
        let frames = try (0..<3).map { i in
            SDImageFrame(image: try coordinateImage(8, 6, alpha: UInt32(100 + i)), duration: Double(i + 1) / 10)
        }
        let image = try #require(SDImage.animatedImage(with: frames, loopCount: 2))
        #expect(image.sd_isAnimated && image.sd_imageFrameCount == 3 && image.sd_imageLoopCount == 2)
        #expect(abs(image.duration - 0.6) < 1e-9)
        #expect(pixel(image, 1, 1) == pixel(frames[0].image, 1, 1)) // the image itself is frame 0
        #expect(image.cost == 3 * frames[0].image.cost)
        let p = try #require(image.animatedProvider)
        #expect(pixel(try #require(p.animatedImageFrame(at: 2)), 0, 0) >> 24 == 102)
        #expect(p.animatedImageFrame(at: 3) == nil && p.animatedImageDuration(at: 3) == 0)
        let back = try #require(SDImage.frames(from: image))
        #expect(back.count == 3 && back.map(\.duration) == [0.1, 0.2, 0.3])
        #expect(image.description.contains("3 frames"))
    }

    @Test("A still image is one frame that plays once; mismatched or no frames make no animation")
    func stillsAndRefusals() throws {
        let still = try coordinateImage(4, 4)
        #expect(!still.sd_isAnimated && still.sd_imageFrameCount == 1 && still.sd_imageLoopCount == 1)
        #expect(still.duration == 0 && SDImage.frames(from: still) == nil)
        #expect(SDImage.animatedImage(with: []) == nil)
        let odd = [SDImageFrame(image: still, duration: 0.1), SDImageFrame(image: try coordinateImage(5, 4), duration: 0.1)]
        #expect(SDImage.animatedImage(with: odd) == nil)
        let one = try #require(SDImage.animatedImage(with: [SDImageFrame(image: still, duration: 0.1)]))
        #expect(one === still)
        // decoded stills report the same model
        let png = try #require(still.pngData())
        let decoded = try #require(SDImage(data: png))
        #expect(!decoded.sd_isAnimated && decoded.sd_imageFrameCount == 1)
    }
}
