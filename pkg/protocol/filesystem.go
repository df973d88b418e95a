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

// Checkpoint tool names (checkpoints of the whole workspace, kept outside it by the filesystem server).
const (
	ToolCheckpoint      = "sandbox_checkpoint"
	ToolListCheckpoints = "sandbox_list_checkpoints"
	ToolDiff            = "sandbox_diff"
	ToolRestore         = "sandbox_restore"
)

// CheckpointInput takes a checkpoint of the workspace.
type CheckpointInput struct {
	Label string `json:"label,omitempty" jsonschema:"a short note saying what state this is, e.g. before refactoring the parser"`
}

// CheckpointInfo describes one checkpoint. Files counts the regular files it holds, Bytes their sizes together.
type CheckpointInfo struct {
	ID        string `json:"id"`
	Label     string `json:"label"`
	CreatedAt string `json:"created_at" jsonschema:"when it was taken, RFC 3339 UTC"`
	Files     int    `json:"files"`
	Bytes     int64  `json:"bytes"`
}

// CheckpointOutput reports a checkpoint taken. NewBytes is what the store had to add (content it did not hold yet);
// Dropped are the oldest checkpoints removed to stay within the store's cap; Skipped are paths left out (too large
// to restore, not a regular file, folder or symlink), at most a few, with SkippedCount counting them all.
type CheckpointOutput struct {
	CheckpointInfo
	NewBytes     int64    `json:"new_bytes"`
	Dropped      []string `json:"dropped"`
	Skipped      []string `json:"skipped"`
	SkippedCount int      `json:"skipped_count"`
}

// ListCheckpointsInput takes no arguments.
type ListCheckpointsInput struct{}

// ListCheckpointsOutput lists the checkpoints, oldest first, and the store's use and caps.
type ListCheckpointsOutput struct {
	Checkpoints    []CheckpointInfo `json:"checkpoints"`
	StoreBytes     int64            `json:"store_bytes" jsonschema:"bytes of distinct content the store holds for all checkpoints"`
	MaxBytes       int64            `json:"max_bytes"`
	MaxCheckpoints int              `json:"max_checkpoints"`
}

// DiffInput compares a checkpoint with the workspace as it is now, or with a later checkpoint.
type DiffInput struct {
	From  string   `json:"from" jsonschema:"the checkpoint to compare from (its id)"`
	To    string   `json:"to,omitempty" jsonschema:"a checkpoint to compare to; default the workspace as it is now"`
	Paths []string `json:"paths,omitempty" jsonschema:"files or folders to compare; default the whole workspace"`
}

// Changes of a file between two states.
const (
	ChangeAdded    = "added"
	ChangeDeleted  = "deleted"
	ChangeModified = "modified"
)

// DiffFile is one changed path.
type DiffFile struct {
	Path   string `json:"path"`
	Change string `json:"change" jsonschema:"added, deleted or modified"`
}

// DiffOutput holds the changed paths and their unified diff. Truncated says the diff, or the list, was cut at a cap;
// DiffBytes is the whole diff's size, and Note, only when cut, says what was left out and how to see it.
type DiffOutput struct {
	From      string     `json:"from"`
	To        string     `json:"to" jsonschema:"a checkpoint id, or workspace"`
	Files     []DiffFile `json:"files"`
	Diff      string     `json:"diff"`
	Truncated bool       `json:"truncated"`
	DiffBytes int        `json:"diff_bytes" jsonschema:"the size in bytes of the whole diff of the files listed; diff holds it whole unless truncated"`
	Note      string     `json:"note,omitempty" jsonschema:"present only when truncated: what was left out and how to see it"`
}

// DiffToWorkspace is DiffOutput.To when the comparison is with the workspace as it is now.
const DiffToWorkspace = "workspace"

// RestoreInput puts the workspace, or some paths of it, back as a checkpoint holds them.
type RestoreInput struct {
	ID    string   `json:"id" jsonschema:"the checkpoint to restore"`
	Paths []string `json:"paths,omitempty" jsonschema:"files or folders to restore; default the whole workspace"`
}

// NotRestored is a path a restore left as it was, and why.
type NotRestored struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// RestoreOutput reports a restore. SavedAs is the checkpoint that holds the workspace as it was just before, so
// the restore can itself be undone.
type RestoreOutput struct {
	ID          string        `json:"id"`
	SavedAs     string        `json:"saved_as"`
	Written     int           `json:"written"`
	Deleted     int           `json:"deleted"`
	Unchanged   int           `json:"unchanged"`
	NotRestored []NotRestored `json:"not_restored"`
}
