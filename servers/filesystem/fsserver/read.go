package fsserver

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"

	"github.com/goalbox/goalbox/pkg/headtail"
	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func readTool(o Options) *mcp.Tool {
	return &mcp.Tool{
		Name:  protocol.ToolReadFile,
		Title: "Read file",
		Description: fmt.Sprintf("Read a file from the workspace: a UTF-8 text file a range of lines at a time, an image whole, or any file's bytes as base64. "+
			"offset is the first line (1-based, default 1), limit the number of lines (default and maximum %d). "+
			"At most %s of content is returned per call (a single longer line comes back cut, and note says so); truncated=true means "+
			"more lines follow end_line (read again with offset=end_line+1). total_lines is the file's line count. content is the file's exact "+
			"text (no line numbers added), so it can be copied into sandbox_edit_file's old_text. "+
			"A PNG, JPEG, GIF or WebP file (known by its content, not its name) comes back as image content, described by path, mime_type, size, width and height. "+
			"encoding=\"base64\" returns any file's whole content base64-encoded in content, with its size in bytes (offset and limit do not apply). "+
			"Images and base64 reads return whole files of at most %s. "+
			"Other binary files (a NUL byte, or invalid UTF-8) are refused unless encoding is base64; folders and special files are always refused.",
			o.MaxReadLines, sizeText(int64(o.MaxReadContentBytes)), sizeText(o.MaxBinaryReadBytes)),
		InputSchema: encodingInputSchema[protocol.ReadFileInput](),
		// No output schema: an image read's result then carries no structuredContent, the one shape in which the
		// image reaches a Codex model (mcpserve.NoOutputSchema). The results still take readOutputSchema's shapes,
		// and text and base64 reads still carry them as structuredContent.
		OutputSchema: mcpserve.NoOutputSchema,
		Annotations:  annRead("Read file"),
	}
}

// readBufPool holds the buffered readers of reads; a 16 KiB file then costs no buffer allocation.
var readBufPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// readOutput is the contract's result plus a note for the one thing its fields cannot say: that a line longer than
// the content cap was cut. The note is left out of the JSON when empty, so every other read is exactly the contract.
type readOutput struct {
	protocol.ReadFileOutput
	Note string `json:"note,omitempty" jsonschema:"present only when a line longer than the content cap was cut: what was left out"`
}

// LongFields implements mcpserve.LongFields: the content goes last in the result's text, so a client that keeps
// only a head of a long read (Qwen Code: 2.5 KB), or drops a line over 50 KB (opencode), still shows its model
// the lines read, the total and that the read was truncated.
func (readOutput) LongFields() []string { return []string{"content"} }

// imageRead is the result of reading an image: its description, as structured content and as text, and then the
// image itself as an image content item, which is where an image-capable model sees it.
type imageRead struct {
	protocol.ReadFileImageOutput
	data []byte
}

func (i imageRead) MoreContent() []mcp.Content {
	return []mcp.Content{&mcp.ImageContent{Data: i.data, MIMEType: i.MimeType}}
}

// read is sandbox_read_file. It returns a text file's lines (readOutput), an image (imageRead), or, with encoding
// base64, any file's bytes (protocol.ReadFileBase64Output).
func (s *Filesystem) read(ctx context.Context, in protocol.ReadFileInput) (any, error) {
	asBase64, err := binaryEncoding(in.Encoding)
	if err != nil {
		return nil, err
	}
	offset, limit, err := s.readRange(in)
	if err != nil {
		return nil, err
	}
	if asBase64 && (in.Offset != 0 || in.Limit != 0) {
		return nil, fmt.Errorf("offset and limit count the lines of a text read; a base64 read returns the whole file (at most %s): leave them out",
			sizeText(s.opts.MaxBinaryReadBytes))
	}
	rel, f, fi, err := s.g.OpenFile(in.Path)
	if pathguard.IsReason(err, pathguard.ReasonIsDir) {
		return nil, fmt.Errorf("%w; to see a folder's contents use sandbox_list_files", err)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if asBase64 {
		return s.readBase64(f, rel, fi.Size())
	}

	r := readBufPool.Get().(*bufio.Reader)
	r.Reset(f)
	defer func() { r.Reset(nil); readBufPool.Put(r) }()
	head, full, err := peekHead(r, rel)
	if err != nil {
		return nil, err
	}
	if mimeType := sniffImage(head); mimeType != "" {
		return s.readImage(r, rel, fi.Size(), mimeType)
	}
	if why := binaryReason(head, full); why != "" {
		return nil, fmt.Errorf("read %q: refused, %d bytes, binary (%s): a text read returns only text; %s",
			rel, fi.Size(), why, readAsBase64)
	}
	return s.readText(ctx, r, rel, fi.Size(), offset, limit)
}

// readAsBase64 is what a refused binary read can do instead.
const readAsBase64 = `read it with encoding "base64" to get its bytes`

// readText reads limit lines of the text file r from line offset on.
func (s *Filesystem) readText(ctx context.Context, r *bufio.Reader, rel string, size int64, offset, limit int) (readOutput, error) {
	l, err := s.readLines(ctx, r, rel, offset, limit)
	if err != nil {
		return readOutput{}, err
	}
	if offset > 1 && offset > l.total {
		return readOutput{}, fmt.Errorf("read %q: offset %d is past the end: the file has %d lines", rel, offset, l.total)
	}
	if why := binaryReason(l.content.Bytes(), !l.cut); why != "" {
		return readOutput{}, fmt.Errorf("read %q: refused, %d bytes: lines %d-%d are not text (%s): a text read returns only text; %s",
			rel, size, offset, l.end, why, readAsBase64)
	}
	return readOutput{ReadFileOutput: protocol.ReadFileOutput{Path: rel, Content: l.content.String(), StartLine: offset,
		EndLine: l.end, TotalLines: l.total, Truncated: l.cut || l.end < l.total}, Note: l.note}, nil
}

// readRange checks the lines asked for: the first line (1-based) and how many, within the server's maximum.
func (s *Filesystem) readRange(in protocol.ReadFileInput) (offset, limit int, err error) {
	if in.Path == "" {
		return 0, 0, errors.New("path is required: give a file path relative to the workspace")
	}
	if in.Offset < 0 || in.Limit < 0 {
		return 0, 0, fmt.Errorf("offset %d and limit %d must not be negative: offset is a 1-based line number, limit a number of lines up to %d",
			in.Offset, in.Limit, s.opts.MaxReadLines)
	}
	return max(in.Offset, 1), min(cmp.Or(in.Limit, s.opts.MaxReadLines), s.opts.MaxReadLines), nil
}

// peekHead returns the first sniffLen bytes of the file r reads, without consuming them; full says they are the
// whole file.
func peekHead(r *bufio.Reader, rel string) (head []byte, full bool, err error) {
	head, err = r.Peek(sniffLen)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, false, readError(rel, err)
	}
	return head, err == io.EOF, nil
}

// linesRead is what one read took from the file.
type linesRead struct {
	content    bytes.Buffer
	end, total int    // the last line in content, and the file's line count
	cut        bool   // the content cap cut the read
	note       string // why a line came back cut
}

// readLines reads limit lines from line offset on, within the content cap, and counts the file's lines.
func (s *Filesystem) readLines(ctx context.Context, r *bufio.Reader, rel string, offset, limit int) (*linesRead, error) {
	l := &linesRead{}
	total, ended, err := skipLines(ctx, r, rel, offset-1)
	if err != nil || ended {
		l.total = total
		return l, err
	}
	for line := offset; ; line++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := l.content.Len()
		n, eof, over, err := copyLine(ctx, r, &l.content, s.opts.MaxReadContentBytes-start)
		if err != nil {
			return nil, readError(rel, err)
		}
		if n == 0 && eof { // end of file right after a newline (or an empty file)
			l.total = line - 1
			return l, nil
		}
		if over {
			l.cutBefore(line, start, n, s.opts.MaxReadContentBytes)
		} else {
			l.end = line
		}
		if eof {
			l.total = line
			return l, nil
		}
		if over || line == offset+limit-1 {
			// Only the count is still needed: count newlines in big chunks without splitting lines.
			rest, err := countRest(ctx, r)
			if err != nil {
				return nil, readError(rel, err)
			}
			l.total = line + rest
			return l, nil
		}
	}
}

// cutBefore stops the read before line, n bytes long, which the content cap (capBytes) does not leave room for. A
// first line over the cap comes back cut at the cap (on a character boundary) rather than not at all, with a note,
// since its rest cannot be read.
func (l *linesRead) cutBefore(line, start int, n int64, capBytes int) {
	l.cut = true
	if l.end != 0 {
		l.content.Truncate(start)
		return
	}
	l.content.Truncate(start + len(headtail.TrimCutEnd(l.content.Bytes()[start:])))
	l.end = line
	l.note = fmt.Sprintf("line %d is %d bytes long, more than the %s one read returns: only its first %d bytes are shown, and the rest of that line cannot be read with this tool",
		line, n, sizeText(int64(capBytes)), l.content.Len()-start)
}

// skipLines reads past the first n lines, piece by piece however long: never held. When the file ends first, it
// returns the file's line count and ended.
func skipLines(ctx context.Context, r *bufio.Reader, rel string, n int) (total int, ended bool, err error) {
	for line := 1; line <= n; line++ {
		if err := ctx.Err(); err != nil {
			return 0, false, err
		}
		size, eof, _, err := copyLine(ctx, r, nil, -1) // holds none of it
		if err != nil {
			return 0, false, readError(rel, err)
		}
		if eof {
			if size > 0 {
				return line, true, nil
			}
			return line - 1, true, nil
		}
	}
	return 0, false, nil
}

// copyLine copies the line r is at into buf (nil: nowhere), but never more than room bytes of it: the rest of a
// longer line is read and dropped, so no line, however long, is held whole. It returns the line's length, whether it ended at the
// end of the file instead of a newline, and whether it was longer than room (then buf holds exactly room bytes of it).
func copyLine(ctx context.Context, r *bufio.Reader, buf *bytes.Buffer, room int) (n int64, eof, over bool, err error) {
	for {
		piece, rerr := r.ReadSlice('\n')
		if rerr != nil && rerr != io.EOF && rerr != bufio.ErrBufferFull {
			return n, false, over, rerr
		}
		if buf != nil && !over {
			if int(n)+len(piece) > room {
				buf.Write(piece[:room-int(n)])
				over = true
			} else {
				buf.Write(piece)
			}
		}
		n += int64(len(piece))
		switch rerr {
		case nil:
			return n, false, over, nil
		case io.EOF:
			return n, true, over, nil
		}
		if err := ctx.Err(); err != nil { // one check per buffer of a long line
			return n, false, over, err
		}
	}
}

// countRest counts the lines left in r, which is at the start of a line: each newline ends one, and bytes after
// the last newline make one more. It streams through the reader's buffer, so a file of any size costs no memory;
// it takes a read of the whole rest of the file (about a second per GiB from the page cache).
func countRest(ctx context.Context, r *bufio.Reader) (int, error) {
	n := 0
	last := byte('\n')
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		b, err := r.Peek(r.Size())
		if len(b) > 0 {
			n += bytes.Count(b, []byte{'\n'})
			last = b[len(b)-1]
			_, _ = r.Discard(len(b))
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			return 0, err
		}
	}
	if last != '\n' {
		n++
	}
	return n, nil
}

// readError reports an I/O error on an open file by its workspace-relative path, keeping the errno text ("input/output
// error") but not the *fs.PathError's host path.
func readError(rel string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &pathguard.Error{Op: "read", Path: rel, Reason: err.Error()}
}
