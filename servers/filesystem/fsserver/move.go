package fsserver

import (
	"context"
	"errors"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func moveTool() *mcp.Tool {
	return &mcp.Tool{
		Name:  protocol.ToolMovePath,
		Title: "Move path",
		Description: "Move or rename a file or folder inside the workspace; missing parent folders of the destination " +
			"are made. An existing destination file is replaced only with overwrite=true; an existing destination " +
			"folder is never replaced. A folder cannot be moved into itself.",
		Annotations: annMove,
	}
}

func (s *Filesystem) move(_ context.Context, in protocol.MovePathInput) (protocol.MovePathOutput, error) {
	var out protocol.MovePathOutput
	if in.Source == "" || in.Destination == "" {
		return out, errors.New("source and destination are both required: paths relative to the workspace")
	}
	defer s.lockFiles(in.Source, in.Destination)()
	src, dst, err := s.g.Rename(in.Source, in.Destination, in.Overwrite)
	if err != nil {
		return out, err
	}
	return protocol.MovePathOutput{Source: src, Destination: dst}, nil
}
