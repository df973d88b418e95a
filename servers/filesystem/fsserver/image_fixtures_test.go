package fsserver_test

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"
)

// testImage is a small picture, width x height, in two colours, for the encoders below.
func testImage(width, height int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	for x := range width {
		for y := range height {
			img.Set(x, y, color.RGBA{R: uint8(255 * (x % 2)), B: uint8(255 * (y % 2)), A: 255})
		}
	}
	return img
}

func encodePNG(t testing.TB, width, height int) []byte {
	var b bytes.Buffer
	must(t, png.Encode(&b, testImage(width, height)))
	return b.Bytes()
}

func encodeJPEG(t testing.TB, width, height int) []byte {
	var b bytes.Buffer
	must(t, jpeg.Encode(&b, testImage(width, height), nil))
	return b.Bytes()
}

func encodeGIF(t testing.TB, width, height int) []byte {
	var b bytes.Buffer
	must(t, gif.Encode(&b, testImage(width, height), nil))
	return b.Bytes()
}

// encodeWebP makes a lossless WebP (VP8L) of width x height pixels all of colour c, by hand since the standard
// library has no WebP encoder. Each of its five prefix codes is a "simple" code of one symbol (the pixel's green,
// red, blue and alpha, and distance 0), so every pixel takes zero bits, and the bitstream is only its header and
// the codes, as the WebP lossless bitstream specification lays them out.
func encodeWebP(width, height int, c color.RGBA) []byte {
	var w bitWriter
	w.bits(0x2f, 8) // signature
	w.bits(uint32(width-1), 14)
	w.bits(uint32(height-1), 14)
	w.bits(1, 1) // alpha is used
	w.bits(0, 3) // version
	w.bits(0, 1) // no transform
	w.bits(0, 1) // no colour cache
	w.bits(0, 1) // no meta prefix codes
	for _, symbol := range []uint8{c.G, c.R, c.B, c.A, 0} {
		w.bits(1, 1) // simple code
		w.bits(0, 1) // of one symbol
		if symbol < 2 {
			w.bits(0, 1)
			w.bits(uint32(symbol), 1)
		} else {
			w.bits(1, 1)
			w.bits(uint32(symbol), 8)
		}
	}
	data := w.bytes()
	chunk := append([]byte("VP8L"), le32(len(data))...)
	chunk = append(chunk, data...)
	if len(data)%2 == 1 {
		chunk = append(chunk, 0)
	}
	out := append([]byte("RIFF"), le32(4+len(chunk))...)
	return append(append(out, "WEBP"...), chunk...)
}

func le32(n int) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(n)) }

// bitWriter packs bits least significant first, as VP8L reads them.
type bitWriter struct {
	buf  []byte
	used uint // bits used in the last byte
}

func (w *bitWriter) bits(v uint32, n uint) {
	for i := range n {
		if w.used%8 == 0 {
			w.buf = append(w.buf, 0)
		}
		w.buf[len(w.buf)-1] |= byte(v>>i&1) << (w.used % 8)
		w.used++
	}
}

func (w *bitWriter) bytes() []byte { return w.buf }
