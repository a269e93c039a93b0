import CSDCore

/// A frame lent by ``ImageDecoder/withFrame(at:_:)``: the decoder's pixels,
/// valid only inside the closure that receives it.
public struct LentFrame {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// Bytes from one row to the next (at least 4 × width).
    public let bytesPerRow: Int
    /// Premultiplied ARGB32 in native byte order, `bytesPerRow * height` bytes.
    public let bytes: UnsafeRawBufferPointer
}

extension ImageDecoder {
    /// Frame `index` lent, not given (`sd_decoder_frame_view`): usually the
    /// decoder's own canvas, so no copy is made and stepping through an
    /// animation holds one canvas rather than one more per frame. The pixels
    /// are valid only inside `body`; copy what you keep, or use
    /// ``frame(at:)``. Nil while the frame is not complete or when there is
    /// no such frame.
    public func withFrame<R>(at index: Int, _ body: (LentFrame) -> R) throws(CoderError) -> R? {
        guard index >= 0, index <= Int(UInt32.max) else { return nil }
        var out: OpaquePointer?
        let rc = sd_decoder_frame_view(handle, UInt32(index), &out)
        if rc == SD_EAGAIN.rawValue || rc == SD_EOI.rawValue { return nil }
        try CoderError.check(rc, message)
        let b = out!
        let frame = LentFrame(
            width: Int(sd_bitmap_width(b)), height: Int(sd_bitmap_height(b)), bytesPerRow: Int(sd_bitmap_stride(b)),
            bytes: UnsafeRawBufferPointer(start: sd_bitmap_pixels(b), count: Int(sd_bitmap_size(b))))
        return body(frame)
    }
}
