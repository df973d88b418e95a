package fsserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func readTool(o Options) *mcp.Tool {
	return &mcp.Tool{
		Name:  protocol.ToolReadFile,
		Title: "Read file",
		Description: fmt.Sprintf("Read a UTF-8 text file from the workspace, a range of lines at a time. "+
			"offset is the first line (1-based, default 1), limit the number of lines (default and maximum %d). "+
			"At most %s of content is returned per call (a single longer line comes back cut); truncated=true means "+
			"more lines follow end_line (read again with offset=end_line+1). total_lines is the file's line count. content is the file's exact "+
			"text (no line numbers added), so it can be copied into sandbox_edit_file's old_text. "+
			"Binary files (a NUL byte, or invalid UTF-8) are refused, as are folders and special files.",
			o.MaxReadLines, sizeText(int64(o.MaxReadContentBytes))),
		Annotations: annRead("Read file"),
	}
}

// readBufPool holds the buffered readers of reads; a 16 KiB file then costs no buffer allocation.
var readBufPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

func (s *server) read(ctx context.Context, in protocol.ReadFileInput) (protocol.ReadFileOutput, error) {
	var out protocol.ReadFileOutput
	if in.Path == "" {
		return out, errors.New("path is required: give a file path relative to the workspace")
	}
	if in.Offset < 0 || in.Limit < 0 {
		return out, fmt.Errorf("offset %d and limit %d must not be negative: offset is a 1-based line number, limit a number of lines up to %d",
			in.Offset, in.Limit, s.opts.MaxReadLines)
	}
	offset, limit := max(in.Offset, 1), in.Limit
	if limit == 0 || limit > s.opts.MaxReadLines {
		limit = s.opts.MaxReadLines
	}
	rel, f, fi, err := s.g.OpenFile(in.Path)
	if pathguard.IsReason(err, pathguard.ReasonIsDir) {
		return out, fmt.Errorf("%w; to see a folder's contents use sandbox_list_files", err)
	}
	if err != nil {
		return out, err
	}
	defer f.Close()
	out.Path = rel

	r := readBufPool.Get().(*bufio.Reader)
	r.Reset(f)
	defer func() { r.Reset(nil); readBufPool.Put(r) }()

	// Refuse binary files by their head before reading any lines.
	head, err := r.Peek(sniffLen)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return out, readError(rel, err)
	}
	if why := binaryReason(head, err == io.EOF); why != "" {
		return out, fmt.Errorf("read %q: refused, %d bytes, binary (%s): only text files can be read",
			rel, fi.Size(), why)
	}

	var content bytes.Buffer
	var long []byte // a line longer than bufio's buffer, pieced together
	endLine, total, cut := 0, 0, false
	for line := 1; ; line++ {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		chunk, rerr := r.ReadSlice('\n')
		for rerr == bufio.ErrBufferFull {
			long = append(long, chunk...)
			chunk, rerr = r.ReadSlice('\n')
		}
		if long != nil {
			chunk, long = append(long, chunk...), nil
		}
		if rerr != nil && rerr != io.EOF {
			return out, readError(rel, rerr)
		}
		if len(chunk) == 0 { // end of file right after a newline (or an empty file)
			total = line - 1
			break
		}
		done := rerr == io.EOF
		if line >= offset {
			if content.Len()+len(chunk) > s.opts.MaxReadContentBytes {
				cut, done = true, true
				if endLine == 0 {
					// A first line over the cap comes back cut at the cap rather than not at all.
					content.Write(cutUTF8(chunk, s.opts.MaxReadContentBytes))
					endLine = line
				}
			} else {
				content.Write(chunk)
				endLine = line
				done = done || line == offset+limit-1
			}
		}
		if done {
			// Only the count is still needed: count newlines in big chunks without splitting lines.
			n, err := countRest(r)
			if err != nil {
				return out, readError(rel, err)
			}
			total = line + n
			break
		}
	}
	if offset > 1 && offset > total {
		return out, fmt.Errorf("read %q: offset %d is past the end: the file has %d lines", rel, offset, total)
	}
	if why := binaryReason(content.Bytes(), !cut); why != "" {
		return out, fmt.Errorf("read %q: refused, %d bytes: lines %d-%d are not text (%s): only text files can be read",
			rel, fi.Size(), offset, endLine, why)
	}
	out.Content = content.String()
	out.StartLine = offset
	out.EndLine = endLine
	out.TotalLines = total
	out.Truncated = cut || endLine < total
	return out, nil
}

// countRest counts the lines left in r, which is at the start of a line: each newline ends one, and bytes after
// the last newline make one more.
func countRest(r *bufio.Reader) (int, error) {
	n := 0
	last := byte('\n')
	for {
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
