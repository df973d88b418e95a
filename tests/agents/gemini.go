package agents

import "net/http"

// Gemini generateContent (Gemini CLI): contents of parts; a tool result is a functionResponse part (its response
// object), possibly followed by inlineData parts or parts inside it. Gemini CLI streams (streamGenerateContent,
// alt=sse) for the conversation and asks generateContent for side questions.

func readGemini(req map[string]any) Request {
	rec := Request{API: "gemini"}
	for _, p := range list(obj(req["systemInstruction"])["parts"]) {
		rec.System += str(obj(p)["text"])
	}
	for _, t := range list(req["tools"]) {
		for _, d := range list(obj(t)["functionDeclarations"]) {
			rec.Tools = append(rec.Tools, str(obj(d)["name"]))
		}
	}
	for _, c := range list(req["contents"]) {
		for _, p := range list(obj(c)["parts"]) {
			part := obj(p)
			if fr := obj(part["functionResponse"]); fr != nil {
				seen := Seen{Text: jsonText(fr["response"])}
				for _, sub := range list(fr["parts"]) {
					if img, ok := inlineData(obj(sub)); ok {
						seen.Images = append(seen.Images, img)
					}
				}
				rec.Results = append(rec.Results, seen)
				continue
			}
			if n := len(rec.Results); n > 0 {
				last := &rec.Results[n-1]
				if img, ok := inlineData(part); ok {
					last.Images = append(last.Images, img)
				} else if t := str(part["text"]); t != "" && str(obj(c)["role"]) == "user" {
					last.Text += "\n" + t
				}
			}
		}
	}
	return rec
}

func inlineData(part map[string]any) (Image, bool) {
	d := obj(part["inlineData"])
	if d == nil {
		return Image{}, false
	}
	return Image{MIME: str(d["mimeType"]), Base64: str(d["data"])}, true
}

func answerGemini(w http.ResponseWriter, call *Call, name string, stream bool) {
	var part map[string]any
	if call != nil {
		part = map[string]any{"functionCall": map[string]any{"name": name, "args": call.Args}}
	} else {
		part = map[string]any{"text": Final}
	}
	chunk := map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 10, "totalTokenCount": 20},
		"modelVersion":  "scripted",
	}
	if stream {
		sse(w)("", chunk)
		return
	}
	writeJSON(w, chunk)
}
