import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SDCoders
import SDDownloader

extension SDWebImageDownloaderOperation {
    // MARK: - Loop-thread events (record and hop only)

    func received(_ r: DownloadResponse) {
        // Only recorded here (the loop thread); the Foundation response is built on demand.
        lock.lock()
        rawResponse = r
        _response = nil
        lock.unlock()
        if checksInSwift {
            work.async { self.check(self.makeResponse(r)) }
        } else {
            post(.SDWebImageDownloadReceiveResponse, self)
        }
    }

    func makeResponse(_ r: DownloadResponse) -> URLResponse {
        let url = r.url ?? request?.url ?? URL(fileURLWithPath: "/")
        if r.statusCode > 0 {
            var fields: [String: String] = [:]
            for (n, v) in r.headers { fields[n] = v }
            if let http = HTTPURLResponse(url: url, statusCode: r.statusCode, httpVersion: "HTTP/1.1", headerFields: fields) {
                return http
            }
        }
        return URLResponse(url: url, mimeType: r.mimeType, expectedContentLength: Int(r.expectedContentLength),
                           textEncodingName: nil)
    }

    /// The response modifier and the checks C could not express (off the loop).
    func check(_ original: URLResponse) {
        var error: SDWebImageError?
        var response: URLResponse? = original
        if let m = env.responseModifier {
            response = m.modifiedResponse(with: original)
            if response == nil { error = SDWebImageError(.invalidDownloadResponse, "the response modifier returned nil") }
        }
        if let http = response as? HTTPURLResponse {
            if http.statusCode != 304, let codes = env.acceptableStatusCodes, !codes.contains(http.statusCode) {
                error = SDWebImageError(.invalidDownloadStatusCode, "download failed with HTTP status \(http.statusCode)",
                                        statusCode: http.statusCode, response: http)
            } else if let types = env.acceptableContentTypes {
                let mime = (http.mimeType ?? "").lowercased()
                if !types.contains(where: { !$0.isEmpty && mime.hasPrefix($0.lowercased()) }) {
                    error = SDWebImageError(.invalidDownloadContentType, "content type \(mime) is not acceptable",
                                            response: http, contentType: http.mimeType)
                }
            }
        }
        lock.lock()
        _response = response
        rawResponse = nil
        if let error, pendingError == nil { pendingError = error }
        let t = error == nil ? nil : task
        lock.unlock()
        t?.cancel()
        post(.SDWebImageDownloadReceiveResponse, self)
    }

    func progressed(_ received: Int64, _ expected: Int64) {
        lock.lock()
        if progressHandlers == 0 {
            lock.unlock()
            return
        }
        if let last = reported, received == last.received {
            lock.unlock()
            return
        }
        if let last = reported, expected > 0, env.minimumProgressInterval > 0 {
            let f = Double(received) / Double(expected)
            if f - last.fraction < env.minimumProgressInterval && received < expected {
                lock.unlock()
                return
            }
        }
        reported = (received, expected > 0 ? Double(received) / Double(expected) : 0)
        let hs = handlers
        lock.unlock()
        let url = request?.url
        for h in hs { if let p = h.progress { h.queue.async { p(Int(received), Int(expected), url) } } }
    }

    /// Loop thread: the C core's decoder made a preview — the image so far,
    /// or an animation's next frame (then, from two frames on, the animation
    /// so far goes out: SDWebImage's progressive animated image).
    func previewed(_ preview: LoaderPreview) {
        lock.lock()
        corePreviews += 1
        let hs = handlers
        let t = transferOptions
        var soFar: AnimationSoFar?
        if case .frame = preview {
            soFar = animationSoFar ?? AnimationSoFar()
            animationSoFar = soFar
        }
        lock.unlock()
        guard let t else { return }
        let make: (Double) -> SDImage?
        switch preview {
        case .image(let bitmap):
            make = { SDImage(bitmap: bitmap, orientation: 1, scale: $0, isIncremental: true) }
        case .frame(let bitmap, let index, let ms, let loops, let format):
            guard let soFar, let count = soFar.add(bitmap, index: index, milliseconds: ms, loopCount: loops,
                                                   format: format), count >= 2 else { return }
            make = { SDAnimatedImage(animatedCoder: soFar, scale: $0, isIncremental: true) }
        }
        for h in hs where h.options.progressive && h.options.decodesLike(t) {
            guard let c = h.completed, let image = make(h.options.scaleFactor) else { continue }
            h.queue.async { c(image, nil, nil, false) }
        }
    }
}
