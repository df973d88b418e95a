package fsserver

import (
	"context"
	"errors"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func deleteTool() *mcp.Tool {
	return &mcp.Tool{
		Name:  protocol.ToolDeletePath,
		Title: "Delete path",
		Description: "Delete a file, a symlink (never its target) or an empty folder; a folder with contents only with " +
			"recursive=true. Deleting a path that does not exist is not an error: deleted=false says nothing was there. " +
			"The workspace itself cannot be deleted.",
		Annotations: annDelete,
	}
}

func (s *Filesystem) delete(_ context.Context, in protocol.DeletePathInput) (protocol.DeletePathOutput, error) {
	var out protocol.DeletePathOutput
	if in.Path == "" {
		return out, errors.New("path is required: give a file or folder path relative to the workspace")
	}
	defer s.lockFiles(in.Path)()
	rel, deleted, err := s.g.Remove(in.Path, in.Recursive)
	if err != nil {
		return out, err
	}
	return protocol.DeletePathOutput{Path: rel, Deleted: deleted}, nil
}
