package loop

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// Images from tools. A tool result may carry image content (sandbox_read_file of a chart the model drew). A model
// that takes images (Config.Vision) gets them as image parts; others get the structured result alone ({path,
// mime_type, size, width, height}) and a note saying why the picture is missing, so they do not ask again.
//
// The OpenAI chat format has no image parts in tool messages (only user messages may carry them), so the images
// of a turn's results follow those results in one user message, and each tool message says so. It comes after all
// of the turn's tool messages: a user message between them would break the rule that every call's answer follows
// its assistant message.

// imageNoteVision and imageNoteBlind end a tool message whose result held images.
const (
	imageNoteVision = "[the image(s) of this result follow in the next user message]"
	imageNoteBlind  = "[this result holds %d image(s), not shown: the model is not sent images (-vision off or not a known vision model)]"
	imageNoteLarge  = "[this result holds %d image(s) of %d bytes, not shown: more than the context budget allows for one image (-context-bytes)]"
)

// imageWireSize is what one image adds to a request: an image_url part with a data: URL, counted high.
func imageWireSize(img Image) int {
	return len(`{"type":"image_url","image_url":{"url":"data:;base64,"}},`) + len(img.MIMEType) + base64.StdEncoding.EncodedLen(len(img.Data))
}

// imagesSize is what a message's images add to a request: their parts, and the list the text then goes in.
func imagesSize(imgs []Image) int {
	if len(imgs) == 0 {
		return 0
	}
	n := len(`[{"type":"text","text":""},]`)
	for _, img := range imgs {
		n += imageWireSize(img)
	}
	return n
}

// maxImageBytes is the most one result's images may add to a request: a quarter of the context budget, so that a
// picture never forces the rest of the conversation out. 0 is no bound (no budget).
func (r *runner) maxImageBytes() int {
	return r.cfg.Limits.ContextBytes / 4
}

// keepImages takes note of a result's images for the user message that follows the turn's results, and returns
// the note for the tool message ("" when there were none).
func (r *runner) keepImages(tc ToolCall, res ToolResult) string {
	if len(res.Images) == 0 || res.IsError {
		return ""
	}
	if !r.cfg.Vision {
		return fmt.Sprintf(imageNoteBlind, len(res.Images))
	}
	if size := imagesSize(res.Images); r.maxImageBytes() > 0 && size > r.maxImageBytes() {
		return fmt.Sprintf(imageNoteLarge, len(res.Images), size)
	}
	r.images = append(r.images, pendingImages{call: tc, images: res.Images})
	return imageNoteVision
}

// pendingImages are one call's images waiting for the end of the turn's results.
type pendingImages struct {
	call   ToolCall
	images []Image
}

// flushImages adds the user message that carries the turn's images, if any.
func (r *runner) flushImages() {
	if len(r.images) == 0 {
		return
	}
	var from []string
	var imgs []Image
	for _, p := range r.images {
		from = append(from, fmt.Sprintf("%s (call %s, %s)", p.call.Name, p.call.ID, imageSource(p.call)))
		imgs = append(imgs, p.images...)
	}
	r.images = nil
	r.add(Message{Role: RoleUser, Content: "The image(s) returned by " + strings.Join(from, ", ") + ":", Images: imgs})
}

// imageSource names what an image came from: the path the call read, when it has one.
func imageSource(tc ToolCall) string {
	var in struct {
		Path string `json:"path"`
	}
	if json.Unmarshal([]byte(tc.Arguments), &in) == nil && in.Path != "" {
		return in.Path
	}
	return "its result"
}
