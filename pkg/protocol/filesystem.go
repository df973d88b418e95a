// Package protocol is the tool contract of goalbox: tool names, inputs and outputs with their JSON field names, and
// what each server's health endpoint reports, in one place that both servers and the agent share. Nothing here does
// any work; it only says what goes over the wire.
//
// Every path is workspace-relative with "/" separators. An absolute path is accepted only under the advertised root
// (DefaultRoot unless configured) or under the workspace's real path, and means the same file.
package protocol

// DefaultRoot is where the workspace appears to clients, whatever its host path.
const DefaultRoot = "/workspace"

// Filesystem tool names.
const (
	ToolReadFile    = "sandbox_read_file"
	ToolWriteFile   = "sandbox_write_file"
	ToolEditFile    = "sandbox_edit_file"
	ToolListFiles   = "sandbox_list_files"
	ToolSearchFiles = "sandbox_search_files"
	ToolDeletePath  = "sandbox_delete_path"
	ToolMovePath    = "sandbox_move_path"
)

// Encodings of a file's content in sandbox_read_file and sandbox_write_file.
const (
	// EncodingText is the default: a read returns a text file's lines (or an image as image content), a write
	// stores content as it is.
	EncodingText = "text"
	// EncodingBase64 moves any file byte for byte: a read returns the whole file base64-encoded (standard
	// alphabet, padded), a write decodes content before storing it.
	EncodingBase64 = "base64"
)

// ReadFileInput asks for a slice of a text file's lines, an image, or (Encoding base64) a whole file's bytes.
type ReadFileInput struct {
	Path     string `json:"path" jsonschema:"file to read, relative to the workspace"`
	Offset   int    `json:"offset,omitempty" jsonschema:"first line to return, 1-based; default 1 (text reads only)"`
	Limit    int    `json:"limit,omitempty" jsonschema:"most lines to return; default and maximum are set by the server (text reads only)"`
	Encoding string `json:"encoding,omitempty" jsonschema:"text (default): a text file's lines, or a PNG, JPEG, GIF or WebP image as image content; base64: the whole file's bytes, base64-encoded, for any file"`
}

// ReadFileOutput is the slice that was read. EndLine is inclusive; TotalLines does not count an empty line after a
// final newline. Truncated says more lines exist past EndLine or a byte cap cut the read.
type ReadFileOutput struct {
	Path       string `json:"path"`
	Content    string `json:"content"`
	StartLine  int    `json:"start_line"`
	EndLine    int    `json:"end_line"`
	TotalLines int    `json:"total_lines"`
	Truncated  bool   `json:"truncated"`
}

// ReadFileImageOutput is the structured result of reading an image (PNG, JPEG, GIF or WebP, known by its content,
// not its name): the image itself comes as an MCP image content item, after the text content that holds this JSON.
// Size is the file's size in bytes; Width and Height are the image's pixels, as its header declares them.
type ReadFileImageOutput struct {
	Path     string `json:"path"`
	MimeType string `json:"mime_type" jsonschema:"image/png, image/jpeg, image/gif or image/webp"`
	Size     int64  `json:"size"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
}

// ReadFileBase64Output is the result of a read with Encoding base64: the whole file, byte for byte, in Content
// (standard base64 alphabet, padded). Size is the number of bytes decoded from Content.
type ReadFileBase64Output struct {
	Path     string `json:"path"`
	Encoding string `json:"encoding" jsonschema:"always base64"`
	Content  string `json:"content"`
	Size     int64  `json:"size"`
}

// WriteFileInput replaces (or creates) a whole file.
type WriteFileInput struct {
	Path     string `json:"path" jsonschema:"file to write, relative to the workspace; missing parent folders are made"`
	Content  string `json:"content" jsonschema:"the whole new content of the file"`
	Encoding string `json:"encoding,omitempty" jsonschema:"text (default): content is stored as it is; base64: content is base64 (standard alphabet A-Z a-z 0-9 + /, = padding optional, line breaks ignored) and its decoded bytes are stored"`
}

// WriteFileOutput reports a write, which is atomic: readers see the old file or the new one, never a mix.
// BytesWritten counts the bytes stored (after base64 decoding).
type WriteFileOutput struct {
	Path         string `json:"path"`
	BytesWritten int    `json:"bytes_written"`
	Created      bool   `json:"created"`
}

// EditFileInput replaces exact text in a file.
type EditFileInput struct {
	Path       string `json:"path" jsonschema:"file to edit, relative to the workspace"`
	OldText    string `json:"old_text" jsonschema:"exact text to find; must match once unless replace_all is set"`
	NewText    string `json:"new_text" jsonschema:"text to put in its place"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every match instead of requiring exactly one"`
}

// EditFileOutput reports an edit with a unified diff of what changed.
type EditFileOutput struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
	Diff         string `json:"diff"`
}

// ListFilesInput asks for a folder's entries.
type ListFilesInput struct {
	Path    string `json:"path,omitempty" jsonschema:"folder to list, relative to the workspace; default ."`
	Depth   int    `json:"depth,omitempty" jsonschema:"how many levels to descend; default 1 (the folder's own entries)"`
	Pattern string `json:"pattern,omitempty" jsonschema:"glob that entry names must match, e.g. *.go"`
}

// Entry types in a listing.
const (
	EntryFile    = "file"
	EntryDir     = "dir"
	EntrySymlink = "symlink"
	EntryOther   = "other"
)

// ListEntry is one file system entry; Path is workspace-relative.
type ListEntry struct {
	Path string `json:"path"`
	Type string `json:"type" jsonschema:"file, dir, symlink or other"`
	Size int64  `json:"size"`
}

// ListFilesOutput is a listing, cut at a cap when Truncated.
type ListFilesOutput struct {
	Path      string      `json:"path"`
	Entries   []ListEntry `json:"entries"`
	Truncated bool        `json:"truncated"`
}

// SearchFilesInput asks for lines matching a regular expression.
type SearchFilesInput struct {
	Pattern    string `json:"pattern" jsonschema:"RE2 regular expression matched against each line"`
	Path       string `json:"path,omitempty" jsonschema:"folder or file to search, relative to the workspace; default ."`
	Include    string `json:"include,omitempty" jsonschema:"glob that file names must match, e.g. *.py"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"most matches to return; default and maximum are set by the server"`
}

// SearchMatch is one matching line; Line is 1-based.
type SearchMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// SearchFilesOutput holds the matches, cut at a cap when Truncated.
type SearchFilesOutput struct {
	Matches   []SearchMatch `json:"matches"`
	Truncated bool          `json:"truncated"`
}

// DeletePathInput removes a file, or a folder when Recursive (or when it is empty).
type DeletePathInput struct {
	Path      string `json:"path" jsonschema:"file or folder to delete, relative to the workspace"`
	Recursive bool   `json:"recursive,omitempty" jsonschema:"delete a non-empty folder and everything in it"`
}

// DeletePathOutput reports a deletion. Deleted is false when nothing was there.
type DeletePathOutput struct {
	Path    string `json:"path"`
	Deleted bool   `json:"deleted"`
}

// MovePathInput renames a file or folder inside the workspace.
type MovePathInput struct {
	Source      string `json:"source" jsonschema:"file or folder to move, relative to the workspace"`
	Destination string `json:"destination" jsonschema:"new path, relative to the workspace; missing parent folders are made"`
	Overwrite   bool   `json:"overwrite,omitempty" jsonschema:"replace an existing file at the destination"`
}

// MovePathOutput reports a move.
type MovePathOutput struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}
