import CSDL2
import Foundation
import SDWebImage

/// One cell of the grid: a view of the WebCache layer whose images become
/// an SDL texture. Cells are recycled while scrolling; `sd_setImage` on a
/// recycled cell cancels its previous load, and a result of that load is
/// never shown (the layer's generations). Touched on the main thread only.
final class GalleryCell: SDWebImageView, @unchecked Sendable {
    let sd_webImageState = SDWebImageViewState()
    /// The program's SDL event loop: results, transition frames and
    /// animation ticks are drained there (no libdispatch main queue runs).
    let sd_viewQueue: SDCallbackQueue
    private let mainLoop: SDMainLoopQueue
    func sd_makeAnimationClock() -> any SDAnimatedImagePlayerClock { SDAnimatedImageDisplayClock(mainLoop: mainLoop) }

    /// The grid index shown (-1: spare) and its URL.
    var index = -1
    var url: URL?
    /// The final image of `url` has come (not the placeholder, not a preview).
    var finished = false
    private(set) var image: SDImage?
    private(set) var alpha = 1.0
    private var texture: OpaquePointer?
    private var textureSize = (w: 0, h: 0)
    private var stale = false
    private let changed: () -> Void

    /// The cell's size in window points and the screen's pixels per point
    /// (SDL's drawable size over its window size: 2 on a HiDPI screen): with
    /// `.fitView` sizing, each load decodes no larger than the cell's pixels.
    var viewSize: CGSize?
    var scale = 1.0
    var sd_viewSize: CGSize? { viewSize }
    var sd_scaleFactor: Double { scale }

    init(mainLoop: SDMainLoopQueue, indicator: String? = nil, changed: @escaping () -> Void) {
        self.mainLoop = mainLoop
        sd_viewQueue = SDCallbackQueue(mainLoop: mainLoop)
        self.changed = changed
        sd_webImageState.imageSizing = .fitView()
        switch indicator {  // --indicators: what shows while a cell loads
        case "activity":  // light on the grey placeholder
            sd_imageIndicator = SDWebImageActivityIndicator(size: 28, color: SDWebImageIndicatorColor(0xE0, 0xE0, 0xE0),
                                                            clock: SDAnimatedImageDisplayClock(mainLoop: mainLoop, framesPerSecond: 12))
        case "progress": sd_imageIndicator = SDWebImageProgressIndicator(size: 64, height: 4)
        default: break
        }
    }

    deinit {
        if let texture { SDL_DestroyTexture(texture) }
        if let overlayTexture { SDL_DestroyTexture(overlayTexture) }
    }

    /// The activity indicator's overlay (nil: none), drawn over the cell.
    private(set) var overlay: SDImage?
    private var overlayTexture: OpaquePointer?
    private var overlayStale = false

    func sd_displayIndicator(_ overlay: SDImage?) {
        self.overlay = overlay
        overlayStale = true
        changed()
    }

    /// The overlay's texture (premultiplied "over": only where the renderer
    /// has that blend; SDL's software renderer shows no indicator).
    func overlayTexture(_ renderer: OpaquePointer, blend: SDL_BlendMode?) -> OpaquePointer? {
        guard let overlay, let blend else { return nil }
        if overlayStale || overlayTexture == nil {
            if let overlayTexture { SDL_DestroyTexture(overlayTexture) }
            overlayTexture = SDL_CreateTexture(renderer, SDL_PIXELFORMAT_ARGB8888.rawValue,
                                               Int32(SDL_TEXTUREACCESS_STATIC.rawValue), Int32(overlay.width), Int32(overlay.height))
            guard let overlayTexture else { return nil }
            SDL_SetTextureBlendMode(overlayTexture, blend)
            overlay.withUnsafeBytes { _ = SDL_UpdateTexture(overlayTexture, nil, $0.baseAddress, Int32(overlay.bytesPerRow)) }
            overlayStale = false
        }
        return overlayTexture
    }

    func sd_display(_ image: SDImage?) { sd_display(image, alpha: 1) }

    func sd_display(_ image: SDImage?, alpha: Double) {
        self.image = image
        self.alpha = alpha
        stale = true
        changed()
    }

    /// The texture of the image shown, uploaded when it changed: our
    /// premultiplied ARGB32 is SDL_PIXELFORMAT_ARGB8888 as it is, drawn with
    /// `blend` (premultiplied "over"). Without such a blend (SDL's software
    /// renderer) an image with alpha is composited over `background` first.
    func texture(_ renderer: OpaquePointer, blend: SDL_BlendMode?, background: (UInt8, UInt8, UInt8)) -> OpaquePointer? {
        guard let image else { return nil }
        if stale || texture == nil {
            let (w, h) = (image.width, image.height)
            if texture == nil || textureSize != (w, h) {
                if let texture { SDL_DestroyTexture(texture) }
                texture = SDL_CreateTexture(renderer, SDL_PIXELFORMAT_ARGB8888.rawValue,
                                            Int32(SDL_TEXTUREACCESS_STREAMING.rawValue), Int32(w), Int32(h))
                textureSize = (w, h)
            }
            guard let texture else { return nil }
            if let blend {
                SDL_SetTextureBlendMode(texture, blend)
                image.withUnsafeBytes { _ = SDL_UpdateTexture(texture, nil, $0.baseAddress, Int32(image.bytesPerRow)) }
            } else if !image.hasAlpha {
                SDL_SetTextureBlendMode(texture, SDL_BLENDMODE_NONE)
                image.withUnsafeBytes { _ = SDL_UpdateTexture(texture, nil, $0.baseAddress, Int32(image.bytesPerRow)) }
            } else {
                SDL_SetTextureBlendMode(texture, SDL_BLENDMODE_NONE)
                var over = [UInt8](repeating: 0, count: w * h * 4)
                image.withUnsafeBytes { src in
                    Self.composite(src, stride: image.bytesPerRow, w: w, h: h, over: background, into: &over)
                }
                over.withUnsafeBytes { _ = SDL_UpdateTexture(texture, nil, $0.baseAddress, Int32(w * 4)) }
            }
            stale = false
        }
        // a fade: premultiplied, so colour and alpha are scaled alike
        let a = UInt8(max(0, min(255, (alpha * 255).rounded())))
        SDL_SetTextureAlphaMod(texture, a)
        if blend != nil { SDL_SetTextureColorMod(texture, a, a, a) }
        return texture
    }

    /// src (premultiplied BGRA in memory) over an opaque colour.
    private static func composite(_ src: UnsafeRawBufferPointer, stride: Int, w: Int, h: Int,
                                  over bg: (UInt8, UInt8, UInt8), into out: inout [UInt8]) {
        let (r, g, b) = (UInt32(bg.0), UInt32(bg.1), UInt32(bg.2))
        for y in 0..<h {
            for x in 0..<w {
                let s = y * stride + x * 4, d = (y * w + x) * 4
                let inv = 255 - UInt32(src[s + 3])
                out[d] = UInt8(min(255, UInt32(src[s]) + (b * inv + 127) / 255))
                out[d + 1] = UInt8(min(255, UInt32(src[s + 1]) + (g * inv + 127) / 255))
                out[d + 2] = UInt8(min(255, UInt32(src[s + 2]) + (r * inv + 127) / 255))
                out[d + 3] = 255
            }
        }
    }
}
