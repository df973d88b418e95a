package fsserver

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
)

// The image formats a read returns as MCP image content: those that the models' APIs accept.
const (
	mimePNG  = "image/png"
	mimeJPEG = "image/jpeg"
	mimeGIF  = "image/gif"
	mimeWebP = "image/webp"
)

// sniffImage is the MIME type of the image format whose signature head (a file's first bytes) starts with, or ""
// when it starts with none of the four. The content decides, never the file's name.
func sniffImage(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return mimePNG
	case bytes.HasPrefix(head, []byte{0xff, 0xd8, 0xff}):
		return mimeJPEG
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return mimeGIF
	case len(head) >= 12 && bytes.HasPrefix(head, []byte("RIFF")) && string(head[8:12]) == "WEBP":
		return mimeWebP
	}
	return ""
}

// imagePixels checks that data, whose signature says it is a mimeType image, is one as far as its header and its
// end tell, and returns its size in pixels. A file cut short or with a broken header would be refused by the model's
// API, often failing the whole conversation, so it is refused here instead, as binary. Every pixel is not decoded:
// that could take far more memory than the file (a small PNG can declare a huge canvas).
func imagePixels(mimeType string, data []byte) (width, height int, err error) {
	var cfg image.Config
	r := bytes.NewReader(data)
	switch mimeType {
	case mimePNG:
		cfg, err = png.DecodeConfig(r)
		err = headerError(err)
		if err == nil && !bytes.Contains(data[max(0, len(data)-4096):], []byte("IEND\xaeB`\x82")) {
			err = errors.New("it has no IEND chunk: the file is cut short")
		}
	case mimeJPEG:
		cfg, err = jpeg.DecodeConfig(r)
		err = headerError(err)
		if err == nil && !bytes.Contains(data[max(0, len(data)-4096):], []byte{0xff, 0xd9}) {
			err = errors.New("it has no end-of-image marker: the file is cut short")
		}
	case mimeGIF:
		cfg, err = gif.DecodeConfig(r)
		err = headerError(err)
	case mimeWebP:
		cfg.Width, cfg.Height, err = webpPixels(data)
	default:
		return 0, 0, fmt.Errorf("%s is not an image type this server returns", mimeType)
	}
	if err == nil && (cfg.Width <= 0 || cfg.Height <= 0) {
		err = fmt.Errorf("its header declares %dx%d pixels", cfg.Width, cfg.Height)
	}
	return cfg.Width, cfg.Height, err
}

// headerError says that the image's header could not be read, and why.
func headerError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("its header cannot be read: %w", err)
}

// webpPixels reads a WebP file's canvas size from its first chunk (the standard library has no WebP decoder):
// VP8X (extended), VP8L (lossless) or "VP8 " (lossy), as the WebP container specification lays them out.
func webpPixels(data []byte) (width, height int, err error) {
	if len(data) < 20 {
		return 0, 0, errors.New("its RIFF header is cut short")
	}
	if riff := int64(binary.LittleEndian.Uint32(data[4:8])) + 8; riff > int64(len(data)) {
		return 0, 0, fmt.Errorf("its RIFF header declares %d bytes, but the file has %d: it is cut short", riff, len(data))
	}
	chunk, body := string(data[12:16]), data[20:]
	switch {
	case chunk == "VP8X" && len(body) >= 10:
		return int(le24(body[4:7])) + 1, int(le24(body[7:10])) + 1, nil
	case chunk == "VP8L" && len(body) >= 5 && body[0] == 0x2f:
		bits := binary.LittleEndian.Uint32(body[1:5])
		return int(bits&0x3fff) + 1, int(bits>>14&0x3fff) + 1, nil
	case chunk == "VP8 " && len(body) >= 10 && bytes.Equal(body[3:6], []byte{0x9d, 0x01, 0x2a}):
		return int(binary.LittleEndian.Uint16(body[6:8]) & 0x3fff), int(binary.LittleEndian.Uint16(body[8:10]) & 0x3fff), nil
	}
	return 0, 0, fmt.Errorf("its first chunk %q is not a valid VP8X, VP8L or VP8 header", chunk)
}

func le24(b []byte) uint32 { return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 }
