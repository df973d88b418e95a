package protocol

// ToolReadOutput reads a page of a full output the executor kept (a stdout_resource or stderr_resource): the same
// bytes resources/read serves, through a tool, for the clients that give their model no resource tool (Qwen Code)
// or offer it only for listed resources (Gemini CLI).
const ToolReadOutput = "sandbox_read_output"

// ReadOutputInput names a kept output and the page of it to read.
type ReadOutputInput struct {
	URI    string `json:"uri" jsonschema:"the stdout_resource or stderr_resource a result gave (goalbox-output://…), without a query"`
	Offset int64  `json:"offset,omitempty" jsonschema:"first byte to read; default 0; read on from next_offset"`
	Length int64  `json:"length,omitempty" jsonschema:"most bytes to return; the default and the maximum are set by the server"`
}

// ReadOutputOutput is one page of a kept output: where it is in the stream, and its bytes, as Text when they are
// UTF-8, else as Base64.
type ReadOutputOutput struct {
	URI        string `json:"uri"`
	Offset     int64  `json:"offset"`
	Length     int64  `json:"length"`
	NextOffset int64  `json:"next_offset"`
	Size       int64  `json:"size"`     // bytes kept so far
	Complete   bool   `json:"complete"` // the stream has ended: size is final
	Text       string `json:"text,omitempty"`
	Base64     string `json:"base64,omitempty"`
}
