package fsserver

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/goalbox/goalbox/pkg/protocol"
)

// binaryEncoding checks a read's or write's encoding and says whether it is base64.
func binaryEncoding(encoding string) (bool, error) {
	switch encoding {
	case "", protocol.EncodingText:
		return false, nil
	case protocol.EncodingBase64:
		return true, nil
	}
	return false, fmt.Errorf("encoding %q is not known: use %q (the default) or %q (any file's bytes)",
		encoding, protocol.EncodingText, protocol.EncodingBase64)
}

// readBase64 returns the whole file f, byte for byte, base64-encoded.
func (s *Filesystem) readBase64(f io.Reader, rel string, size int64) (protocol.ReadFileBase64Output, error) {
	data, err := s.readWhole(f, rel, size, "a base64 read returns the whole file")
	if err != nil {
		return protocol.ReadFileBase64Output{}, err
	}
	return protocol.ReadFileBase64Output{Path: rel, Encoding: protocol.EncodingBase64,
		Content: base64.StdEncoding.EncodeToString(data), Size: int64(len(data))}, nil
}

// readImage returns the image r reads, whose head says it is a mimeType image, once its header checks out; a file
// that only starts like an image is refused as binary.
func (s *Filesystem) readImage(r io.Reader, rel string, size int64, mimeType string) (imageRead, error) {
	data, err := s.readWhole(r, rel, size, "an image is returned whole")
	if err != nil {
		return imageRead{}, fmt.Errorf("%w; make a smaller copy (scaled down or more compressed) and read that", err)
	}
	width, height, err := imagePixels(mimeType, data)
	if err != nil {
		format := strings.ToUpper(strings.TrimPrefix(mimeType, "image/"))
		return imageRead{}, fmt.Errorf("read %q: refused, %d bytes, binary: it starts like a %s image but is not a whole, valid one (%v); %s",
			rel, len(data), format, err, readAsBase64)
	}
	return imageRead{ReadFileImageOutput: protocol.ReadFileImageOutput{Path: rel, MimeType: mimeType,
		Size: int64(len(data)), Width: width, Height: height}, data: data}, nil
}

// readWhole reads all of a file of size bytes (as it was opened; it may since have grown) for a read that returns
// files whole, which holds them in memory: at most the binary read cap. why says which read it is.
func (s *Filesystem) readWhole(r io.Reader, rel string, size int64, why string) ([]byte, error) {
	capBytes := s.opts.MaxBinaryReadBytes
	tooLarge := func(n int64) error {
		return fmt.Errorf("read %q: refused, %d bytes: too large: %s, and at most %s", rel, n, why, sizeText(capBytes))
	}
	if size > capBytes {
		return nil, tooLarge(size)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(r, capBytes+1)); err != nil {
		return nil, readError(rel, err)
	}
	if int64(buf.Len()) > capBytes {
		return nil, tooLarge(int64(buf.Len()))
	}
	return buf.Bytes(), nil
}

// decodeBase64 decodes a write's base64 content: the standard alphabet, with or without = padding, ignoring line
// breaks (as base64 tools wrap it).
func decodeBase64(content string) ([]byte, error) {
	data, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(content, "=\r\n"))
	var corrupt base64.CorruptInputError
	if errors.As(err, &corrupt) {
		return nil, fmt.Errorf("content is not valid base64 (at byte %d): encoding %q takes the standard alphabet A-Z a-z 0-9 + / "+
			"with optional = padding at the end and line breaks anywhere; no spaces, no URL-safe - or _", int64(corrupt), protocol.EncodingBase64)
	}
	return data, err
}
