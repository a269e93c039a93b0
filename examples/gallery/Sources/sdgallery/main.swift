// sdgallery — a scrolling grid of images from URLs, in Swift on SDL2 through
// the WebCache layer (`sd_setImage` on recycled cells): placeholders,
// progressive previews, animated GIF/WebP playing, a fade-in.
//
//   sdgallery --list URLS.txt [--cell 128] [--width 900] [--height 700]
//             [--fade SECONDS] [--cache DIR] [--layout FILE] [--indicators activity|progress]
//             [--timeout SECONDS]
//
// Wheel, arrow keys, Page Up/Down, Home/End scroll; Escape or q quits.
// --layout writes, after every frame drawn, where each visible image is and
// whether it is final (`make gallery-check` reads it); it also makes the
// window borderless at (0, 0). Without --cache, images are cached in
// memory and in a disk cache of this run, removed at exit. --timeout is the
// downloader's downloadTimeout (15 s when not given): how long a load may
// wait for its next byte. `make gallery-check` holds one image back for as
// long as its checks take, and gives a long one.
import CSDL2
import Dispatch
import Foundation
import SDWebImage

func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("sdgallery: \(message)\n".utf8))
    exit(status)
}

var listPath: String?, layoutPath: String?, cacheDir: String?
var cell = 128, width = 900, height = 700, fade = 0.25
var indicators: String?  // "activity" or "progress": shown while a cell loads
var timeout: TimeInterval?
var args = CommandLine.arguments.dropFirst()
while let flag = args.popFirst() {
    guard let value = args.popFirst() else { fail("\(flag) needs a value", status: 2) }
    switch flag {
    case "--list": listPath = value
    case "--layout": layoutPath = value
    case "--cache": cacheDir = value
    case "--cell": cell = Int(value) ?? 0
    case "--width": width = Int(value) ?? 0
    case "--height": height = Int(value) ?? 0
    case "--fade": fade = Double(value) ?? -1
    case "--indicators": indicators = value
    case "--timeout": timeout = TimeInterval(value) ?? -1
    default: fail("unknown option \(flag)", status: 2)
    }
}
guard let listPath, cell >= 16, width >= 64, height >= 64, fade >= 0, (timeout ?? 0) >= 0 else {
    fail("usage: sdgallery --list URLS.txt [--cell 128] [--width W] [--height H] [--fade S] [--cache DIR] [--layout FILE] [--indicators activity|progress] [--timeout S]",
         status: 2)
}
guard let list = try? String(contentsOfFile: listPath, encoding: .utf8) else { fail("cannot read \(listPath)") }
let urls = list.split(whereSeparator: \.isNewline).compactMap { URL(string: String($0)) }
guard !urls.isEmpty else { fail("no URLs in \(listPath)") }

// The cache of this run unless told otherwise: a rerun of the check must
// not see the images of an earlier one.
let ownCache = cacheDir == nil
let cachePath = cacheDir ?? NSTemporaryDirectory() + "sdgallery-\(getpid())"
if let timeout { SDWebImageDownloader.shared.config.downloadTimeout = timeout }
let manager = SDWebImageManager(cache: SDImageCache(namespace: "gallery", diskCacheDirectory: cachePath),
                                loader: SDWebImageDownloader.shared)

guard SDL_Init(SDL_INIT_VIDEO) == 0 else { fail("SDL_Init: \(String(cString: SDL_GetError()))") }
let windowFlags = SDL_WINDOW_SHOWN.rawValue | (layoutPath != nil ? SDL_WINDOW_BORDERLESS.rawValue : 0)
guard let window = SDL_CreateWindow("sd gallery", 0, 0, Int32(width), Int32(height), windowFlags) else {
    fail("SDL_CreateWindow: \(String(cString: SDL_GetError()))")
}
guard let renderer = SDL_CreateRenderer(window, -1, 0) else {
    fail("SDL_CreateRenderer: \(String(cString: SDL_GetError()))")
}
// The cells' callbacks wait in this queue; a queued batch pushes an SDL
// user event, which wakes SDL_WaitEvent below.
let wakeType = SDL_RegisterEvents(1)
let mainLoop = SDMainLoopQueue(wakeup: {
    var e = SDL_Event()
    e.type = wakeType
    SDL_PushEvent(&e)
})
let gallery = Gallery(window: window, renderer: renderer, urls: urls, cellSize: cell, manager: manager,
                      layoutPath: layoutPath, fade: fade, mainLoop: mainLoop, indicator: indicators)
var info = SDL_RendererInfo()
SDL_GetRendererInfo(renderer, &info)
FileHandle.standardError.write(Data(("sdgallery: \(urls.count) images, SDL renderer \(String(cString: info.name)), "
    + (gallery.blend != nil ? "premultiplied blend\n" : "no premultiplied blend: images with alpha composited first\n")).utf8))

@MainActor func quit() -> Never {
    FileHandle.standardError.write(Data("sdgallery: \(wakes) wakeups of the event loop\n".utf8))
    gallery.close()
    SDL_DestroyRenderer(renderer)
    SDL_DestroyWindow(window)
    SDL_Quit()
    if ownCache { try? FileManager.default.removeItem(atPath: cachePath) }
    exit(gallery.failures > 0 ? 1 : 0)
}

@MainActor func handle(_ e: SDL_Event) {
    let page = max(gallery.pitch, height - gallery.pitch)
    switch SDL_EventType(e.type) {
    case SDL_QUIT: quit()
    case SDL_MOUSEWHEEL: gallery.scroll(by: -Int(e.wheel.y) * 48)
    case SDL_WINDOWEVENT: gallery.setNeedsDisplay()
    case SDL_KEYDOWN:
        switch Int(e.key.keysym.sym) {
        case Int(SDLK_ESCAPE.rawValue), Int(SDLK_q.rawValue): quit()
        case Int(SDLK_DOWN.rawValue): gallery.scroll(by: gallery.pitch)
        case Int(SDLK_UP.rawValue): gallery.scroll(by: -gallery.pitch)
        case Int(SDLK_PAGEDOWN.rawValue), Int(SDLK_SPACE.rawValue): gallery.scroll(by: page)
        case Int(SDLK_PAGEUP.rawValue): gallery.scroll(by: -page)
        case Int(SDLK_HOME.rawValue): gallery.scroll(to: 0)
        case Int(SDLK_END.rawValue): gallery.scroll(to: gallery.maxScroll)
        default: break
        }
    default: break
    }
}

// SDL's own event loop on the main thread: it sleeps in SDL_WaitEvent until
// an event comes — input, or a batch of the cells' callbacks (loads,
// transition frames, animation ticks, which tick only while something
// plays) — then drains the callbacks and draws if something changed. SDL
// turns SIGINT and SIGTERM into SDL_QUIT.
var event = SDL_Event()
var wakes = 0
while true {
    if SDL_WaitEvent(&event) != 0 { handle(event) }
    while SDL_PollEvent(&event) != 0 { handle(event) }
    mainLoop.drain()
    gallery.update()
    wakes += 1
}
