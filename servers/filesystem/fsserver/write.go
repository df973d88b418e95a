package fsserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func writeTool(g *pathguard.Guard) *mcp.Tool {
	return &mcp.Tool{
		Name:  protocol.ToolWriteFile,
		Title: "Write file",
		Description: fmt.Sprintf("Create a file or replace its whole content; missing parent folders are made. "+
			"The write is atomic: readers see the old file or the new one, never a mix. "+
			"created says whether the file is new. At most %s. "+
			"encoding=\"base64\" writes any bytes: content is then base64 (standard alphabet, = padding optional), "+
			"and the limit and bytes_written count the decoded bytes. "+
			"To change part of an existing file, sandbox_edit_file is safer.", sizeText(g.Options().MaxWriteBytes)),
		InputSchema: encodingInputSchema[protocol.WriteFileInput](),
		Annotations: annWrite,
	}
}

func (s *Filesystem) write(_ context.Context, in protocol.WriteFileInput) (protocol.WriteFileOutput, error) {
	var out protocol.WriteFileOutput
	if in.Path == "" {
		return out, errors.New("path is required: give a file path relative to the workspace")
	}
	asBase64, err := binaryEncoding(in.Encoding)
	if err != nil {
		return out, err
	}
	data := []byte(in.Content)
	if asBase64 {
		// The guard's size limit and disk cap then apply to the bytes stored, not to their encoding.
		if data, err = decodeBase64(in.Content); err != nil {
			return out, err
		}
	}
	defer s.lockFiles(in.Path)()
	rel, created, err := s.g.WriteFile(in.Path, data)
	if err != nil {
		return out, err
	}
	return protocol.WriteFileOutput{Path: rel, BytesWritten: len(data), Created: created}, nil
}
