import CSDL2
import Foundation
import SDWebImage

/// A scrolling grid of images over the WebCache layer, drawn with SDL2.
/// Only the rows in view have cells; scrolled-off cells go back to a spare
/// list and are bound to the next index that comes into view. Everything
/// here runs on the main thread (the cells' view queue): SDL's events are
/// polled and the frame drawn from a 60 Hz timer on the main queue.
final class Gallery: @unchecked Sendable {
    static let background: (UInt8, UInt8, UInt8) = (0x20, 0x30, 0x40)
    let window: OpaquePointer
    let renderer: OpaquePointer
    let urls: [URL]
    let cellSize: Int
    let gap = 8
    let width: Int, height: Int
    let manager: SDWebImageManager
    let layoutPath: String?
    let fade: Double
    /// SDL's blend for premultiplied "over" when the renderer has it.
    let blend: SDL_BlendMode?
    private let placeholder: SDImage?
    /// Shown in a cell whose image failed (a flat red square, 3/4 of the cell).
    private let failureImage: SDImage?
    private var cells: [Int: GalleryCell] = [:]  // index -> the cell bound to it
    private var spare: [GalleryCell] = []
    private var scrollY = 0
    private var dirty = true
    private(set) var failures = 0
    /// The SDL event loop's queue the cells' callbacks are drained from.
    let mainLoop: SDMainLoopQueue
    /// The cells' activity indicator ("activity", "progress"; nil: none).
    let indicator: String?
    /// Renderer pixels per window point (the cells are laid out in pixels).
    let pixelRatio: Double

    init(window: OpaquePointer, renderer: OpaquePointer, urls: [URL], cellSize: Int, manager: SDWebImageManager,
         layoutPath: String?, fade: Double, mainLoop: SDMainLoopQueue, indicator: String? = nil) {
        self.mainLoop = mainLoop
        self.indicator = indicator
        self.window = window
        self.renderer = renderer
        self.urls = urls
        self.cellSize = cellSize
        self.manager = manager
        self.layoutPath = layoutPath
        self.fade = fade
        var w: Int32 = 0, h: Int32 = 0
        SDL_GetRendererOutputSize(renderer, &w, &h)
        (width, height) = (Int(w), Int(h))
        var ww: Int32 = 0, wh: Int32 = 0
        SDL_GetWindowSize(window, &ww, &wh)
        pixelRatio = ww > 0 && w > ww ? Double(w) / Double(ww) : 1  // HiDPI: drawable pixels per window point
        // SDL2 has no premultiplied blend of its own; renderers that take a
        // custom one (OpenGL, GLES2, Direct3D) do it on the GPU.
        let over = SDL_ComposeCustomBlendMode(SDL_BLENDFACTOR_ONE, SDL_BLENDFACTOR_ONE_MINUS_SRC_ALPHA,
                                              SDL_BLENDOPERATION_ADD, SDL_BLENDFACTOR_ONE,
                                              SDL_BLENDFACTOR_ONE_MINUS_SRC_ALPHA, SDL_BLENDOPERATION_ADD)
        let probe = SDL_CreateTexture(renderer, SDL_PIXELFORMAT_ARGB8888.rawValue,
                                      Int32(SDL_TEXTUREACCESS_STATIC.rawValue), 1, 1)
        blend = probe.map { SDL_SetTextureBlendMode($0, over) == 0 } == true ? over : nil
        if let probe { SDL_DestroyTexture(probe) }
        // a quiet grey square while a cell loads
        let side = max(1, cellSize * 3 / 4)
        failureImage = (try? Bitmap(width: side, height: side) { px in
            for i in stride(from: 0, to: px.count, by: 4) {
                px[i] = 0x30; px[i + 1] = 0x30; px[i + 2] = 0xC0; px[i + 3] = 0xff
            }
        }).map { SDImage(bitmap: $0) }
        placeholder = (try? Bitmap(width: side, height: side) { px in
            for i in stride(from: 0, to: px.count, by: 4) {
                px[i] = 0x50; px[i + 1] = 0x50; px[i + 2] = 0x50; px[i + 3] = 0xff
            }
        }).map { SDImage(bitmap: $0) }
    }

    var pitch: Int { cellSize + gap }
    var columns: Int { max(1, (width - gap) / pitch) }
    var rows: Int { (urls.count + columns - 1) / columns }
    var maxScroll: Int { max(0, rows * pitch + gap - height) }

    func scroll(by dy: Int) {
        let y = max(0, min(maxScroll, scrollY + dy))
        if y != scrollY { scrollY = y; dirty = true }
    }

    func scroll(to y: Int) { scroll(by: y - scrollY) }

    func setNeedsDisplay() { dirty = true }

    /// Bind the cells in view, recycle the rest, draw if anything changed.
    func update() {
        guard dirty else { return }
        dirty = false
        bindVisible()
        draw()
        writeLayout()
    }

    /// The cell's rectangle in the window (before the image is centred in it).
    private func cellOrigin(_ index: Int) -> (x: Int, y: Int) {
        (gap + (index % columns) * pitch, gap + (index / columns) * pitch - scrollY)
    }

    /// Where the image of `cell` is drawn: its own size, centred in the cell.
    private func imageRect(_ cell: GalleryCell) -> SDL_Rect? {
        guard let image = cell.image else { return nil }
        let (x, y) = cellOrigin(cell.index)
        let w = min(image.width, cellSize), h = min(image.height, cellSize)
        return SDL_Rect(x: Int32(x + (cellSize - w) / 2), y: Int32(y + (cellSize - h) / 2), w: Int32(w), h: Int32(h))
    }

    private func bindVisible() {
        let first = max(0, (scrollY - gap) / pitch) * columns
        let last = min(urls.count, ((scrollY + height) / pitch + 1) * columns)
        let wanted = first..<max(first, last)
        for (index, cell) in cells where !wanted.contains(index) {
            cells[index] = nil
            cell.sd_cancelCurrentImageLoad()  // scrolled away before it came: no need for it now
            cell.index = -1
            spare.append(cell)
        }
        for index in wanted where cells[index] == nil {
            let cell = spare.popLast() ?? GalleryCell(mainLoop: mainLoop, indicator: indicator) { [unowned self] in self.dirty = true }
            bind(cell, to: index)
            cells[index] = cell
        }
    }

    private func bind(_ cell: GalleryCell, to index: Int) {
        let url = urls[index]
        cell.index = index
        cell.url = url
        cell.finished = false
        cell.sd_imageTransition = fade > 0 ? .fade(duration: fade) : nil
        // decoded no larger than the cell (frames too): the cell's points times the pixel ratio
        cell.viewSize = CGSize(width: Double(cellSize) / pixelRatio, height: Double(cellSize) / pixelRatio)
        cell.scale = pixelRatio
        var context: SDWebImageContext = [.customManager: manager]
        context[.failureImage] = failureImage
        cell.sd_setImage(with: url, placeholderImage: placeholder, options: [.progressiveLoad], context: context,
                         progress: nil) { [weak self, weak cell] image, error, _, imageURL in
            guard let self, let cell, cell.url == imageURL else { return }
            if image != nil {
                cell.finished = true
            } else if let error, (error as? SDWebImageError)?.code != SDWebImageError.cancelled {
                cell.finished = true  // its final picture is the failure image
                self.failures += 1
                FileHandle.standardError.write(Data("gallery: \(url.lastPathComponent): \(error)\n".utf8))
            }
            self.dirty = true
        }
    }

    private func draw() {
        let bg = Self.background
        SDL_SetRenderDrawColor(renderer, bg.0, bg.1, bg.2, 255)
        SDL_RenderClear(renderer)
        for cell in cells.values {
            if var rect = imageRect(cell), let tex = cell.texture(renderer, blend: blend, background: bg) {
                SDL_RenderCopy(renderer, tex, nil, &rect)
            }
            if let overlay = cell.overlay, let tex = cell.overlayTexture(renderer, blend: blend), cell.index >= 0 {
                let (x, y) = cellOrigin(cell.index)
                var r = SDL_Rect(x: Int32(x + (cellSize - overlay.width) / 2), y: Int32(y + (cellSize - overlay.height) / 2),
                                 w: Int32(overlay.width), h: Int32(overlay.height))
                SDL_RenderCopy(renderer, tex, nil, &r)
            }
        }
        SDL_RenderPresent(renderer)
    }

    /// After every frame drawn, for `make gallery-check`: where each cell in
    /// view shows its image, whether that is the final one, the size of the
    /// bitmap decoded for it (0 0 until then), device pixels per unit of
    /// these rectangles (1: SDL draws in drawable pixels) and the cell's own
    /// rectangle (written whole, renamed):
    /// `cell INDEX X Y W H LOADED DECODED_W DECODED_H SCALE BOX_X BOX_Y BOX_W BOX_H URL`.
    private func writeLayout() {
        guard let layoutPath else { return }
        var text = "viewport 0 0 \(width) \(height) failures \(failures)\n"
        for cell in cells.values.sorted(by: { $0.index < $1.index }) {
            guard let r = imageRect(cell), r.y + r.h > 0, Int(r.y) < height, let url = cell.url else { continue }
            let loaded = cell.finished && cell.alpha >= 1 ? 1 : 0
            let decoded = loaded == 1 ? (cell.image?.width ?? 0, cell.image?.height ?? 0) : (0, 0)
            let (bx, by) = cellOrigin(cell.index)
            text += "cell \(cell.index) \(r.x) \(r.y) \(r.w) \(r.h) \(loaded) \(decoded.0) \(decoded.1) 1 "
                + "\(bx) \(by) \(cellSize) \(cellSize) \(url.absoluteString)\n"
        }
        let tmp = layoutPath + ".tmp"
        if FileManager.default.createFile(atPath: tmp, contents: Data(text.utf8)) { rename(tmp, layoutPath) }
    }

    /// Cancel every load and free the textures (before SDL goes).
    func close() {
        for cell in cells.values { cell.sd_cancelCurrentImageLoad() }
        cells.removeAll()
        spare.removeAll()
    }
}
