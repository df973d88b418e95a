package outputs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Pages of a full output: resources/read returns at most maxOutputPage bytes at a time, defaultOutputPage unless
// the URI asks for another length. A page is text when its bytes are UTF-8 (its end moved back off a split
// character), else a base64 blob; its _meta says where the next page starts.
const (
	defaultOutputPage = 256 << 10
	maxOutputPage     = 4 << 20
)

// outputTemplate is the resource template the full outputs are served under.
const outputTemplate = protocol.OutputResourceScheme + "://{id}/{stream}{?offset,length}"

// outputID is the host and path of an output's URI: the ID newOutputID makes (a session's) or a handle (a
// stateless request's, 26 characters), and the stream's name.
var outputID = regexp.MustCompile(`^([a-z2-7]{16}|[a-z2-7]{26})/[a-z][a-z0-9_-]{0,31}$`)

// AddResources registers on srv the template that serves the full outputs; readerOf says whom a read is made for (a
// session, or the stateless era): the caller's decision, as when it keeps a stream.
func (o *Store) AddResources(srv *mcp.Server, readerOf func(context.Context, *mcp.ServerSession) Owner) {
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:  "command-output",
		Title: "Full output of a command or process",
		Description: fmt.Sprintf("The whole stdout or stderr of a command whose tool result showed only its head and tail, or of a process "+
			"whose stream outgrew its buffer: the result's stdout_resource or stderr_resource names it. Readable only by the session that ran "+
			"the command or process, until the session ends (one made without a session, under MCP "+mcpserve.StatelessVersion+", by whoever "+
			"holds its URI, until unread for "+o.statelessIdle.String()+") "+
			"or newer outputs evict it (each session keeps at most %d bytes, oldest evicted first). A read returns one page: "+
			"offset is its first byte (default 0), length its most bytes (default %d, at most %d); _meta gives offset, length, "+
			"next_offset, size and complete.", o.budget, defaultOutputPage, maxOutputPage),
		URITemplate: outputTemplate,
		MIMEType:    "text/plain",
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return o.readResource(readerOf(ctx, req.Session), req)
	})
}

// readResource serves one page of a full output to reader when it is the session that made it; a stateless one
// to whoever names its handle.
func (o *Store) readResource(reader Owner, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, offset, length, err := parseOutputURI(uri)
	if err != nil {
		return nil, resourceError(uri, err)
	}
	p, err := o.ReadPage(reader, id, offset, length)
	if err != nil {
		return nil, resourceError(uri, err)
	}
	c := &mcp.ResourceContents{URI: uri, Meta: mcp.Meta{"offset": p.Offset, "length": len(p.Data), "next_offset": p.NextOffset,
		"size": p.Size, "complete": p.Complete}}
	if p.Text {
		c.Text, c.MIMEType = string(p.Data), "text/plain; charset=utf-8"
	} else {
		c.Blob, c.MIMEType = p.Data, "application/octet-stream"
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

// Page is one page of a full output: at most the length asked for from Offset, text when its bytes are UTF-8 (its
// end moved back off a split character).
type Page struct {
	Data       []byte
	Text       bool
	Offset     int64
	NextOffset int64
	Size       int64 // bytes kept so far
	Complete   bool  // the stream has ended
}

// ReadPage reads a page of the output id (an output URI's host and path) for reader: the resource's handler and the
// executor's read tool both read through it, so both see the same owner rules.
func (o *Store) ReadPage(reader Owner, id string, offset, length int64) (Page, error) {
	stateless, ow := reader.Stateless, reader
	if host, _, _ := strings.Cut(id, "/"); len(host) == handleLen {
		// A stateless output: its URI is the capability, whoever holds it.
		ow = StatelessOwner
	} else if stateless {
		// A session's output asked for without a session: it is that session's only.
		return Page{}, errNoStatelessOutput
	}
	missing := errNoSuchOutput
	if stateless {
		missing = errNoStatelessOutput
	}
	s := o.owned(ow, false)
	if s == nil {
		return Page{}, missing
	}
	p, err := s.read(id, offset, length)
	switch {
	case errors.Is(err, errNoSuchOutput):
		return Page{}, missing
	case err != nil:
		return Page{}, err
	}
	atEnd := offset+int64(len(p.data)) == p.size && p.complete
	n := textPrefix(p.data, atEnd)
	page := Page{Data: p.data, Text: n > 0, Offset: offset, Size: p.size, Complete: p.complete}
	if page.Text {
		page.Data = p.data[:n]
	}
	page.NextOffset = offset + int64(len(page.Data))
	return page, nil
}

// textPrefix is how many leading bytes of data to send as text: all of it when it is UTF-8, all but a character
// split at its end (unless the stream ends there), or 0 when it is not text (then it goes as a blob).
func textPrefix(data []byte, atEnd bool) int {
	if utf8.Valid(data) {
		return len(data)
	}
	if atEnd {
		return 0
	}
	for cut := 1; cut <= utf8.UTFMax-1 && cut < len(data); cut++ {
		if utf8.Valid(data[:len(data)-cut]) && !utf8.FullRune(data[len(data)-cut:]) {
			return len(data) - cut
		}
	}
	return 0
}

// parseOutputURI reads an output's URI: its ID, and the page it asks for.
func parseOutputURI(uri string) (id string, offset, length int64, err error) {
	u, err := outputURL(uri)
	if err != nil {
		return "", 0, 0, err
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return "", 0, 0, fmt.Errorf("query %q: %v; give ?offset=N&length=M", u.RawQuery, err)
	}
	length = defaultOutputPage
	for k, v := range q {
		if len(v) != 1 {
			return "", 0, 0, fmt.Errorf("%s is given %d times: give it once", k, len(v))
		}
		n, perr := strconv.ParseInt(v[0], 10, 64)
		switch k {
		case "offset":
			if perr != nil || n < 0 {
				return "", 0, 0, fmt.Errorf("offset %q: give the byte to start from, a whole number from 0", v[0])
			}
			offset = n
		case "length":
			if perr != nil || n < 1 || n > maxOutputPage {
				return "", 0, 0, fmt.Errorf("length %q: give the most bytes to return, from 1 to %d (default %d)", v[0], maxOutputPage, defaultOutputPage)
			}
			length = n
		default:
			return "", 0, 0, fmt.Errorf("unknown query parameter %q: an output's URI takes offset and length only", k)
		}
	}
	return u.Host + u.Path, offset, length, nil
}

// outputURL parses uri, the URI of an output (with or without a query).
func outputURL(uri string) (*url.URL, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != protocol.OutputResourceScheme || u.Opaque != "" || u.User != nil || u.Fragment != "" ||
		!outputID.MatchString(u.Host+u.Path) {
		return nil, fmt.Errorf("not the URI of an output: give the stdout_resource or stderr_resource of a result, "+
			"optionally with ?offset=N&length=M (it has the form %s)", outputTemplate)
	}
	return u, nil
}

// OutputID is the ID of the output uri names, a URI without a query (the read tool takes the page as arguments).
func OutputID(uri string) (string, error) {
	u, err := outputURL(uri)
	if err != nil {
		return "", err
	}
	if u.RawQuery != "" || u.ForceQuery {
		return "", fmt.Errorf("give the URI without its query %q, and the page as the offset and length arguments", u.RawQuery)
	}
	return u.Host + u.Path, nil
}

// resourceError is a JSON-RPC error for a read of uri, saying why. Its code is invalid params (-32602) whether the
// URI is bad or names no output: MCP answers a resource not found so since SEP-2164 (the go-sdk follows it; -32002
// was the code before), and the message says which it is.
func resourceError(uri string, err error) error {
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "output " + uri + ": " + err.Error(), Data: data}
}
