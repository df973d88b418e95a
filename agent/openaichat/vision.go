package openaichat

import (
	"slices"
	"strings"
)

// Which models take images. No OpenAI-compatible API says whether a model reads images (a text model sent one
// fails its request, or, on some local servers, silently ignores it), so -vision auto decides from the model's
// name: the families below are known to read image_url parts. Anything else gets no images unless -vision on.
//
// A name is matched without a provider prefix ("openai/gpt-4o" on OpenRouter, "library/llava" from Ollama) and in
// lower case; a family matches the name itself or the name followed by "-", ":", "." or "@" (a size, a tag, a
// date): "gpt-4o" matches "gpt-4o-2024-08-06" and "gpt-4o-mini", "llava" matches "llava:13b".
var visionFamilies = []string{
	// OpenAI
	"gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4-turbo", "gpt-4-vision", "gpt-4.5", "gpt-5", "o1", "o3", "o4-mini",
	// Anthropic and Google, through their OpenAI-compatible endpoints or a router
	"claude-3", "claude-3-5", "claude-3-7", "claude-sonnet-4", "claude-opus-4", "claude-haiku-4", "gemini-1.5", "gemini-2", "gemini-2.0", "gemini-2.5", "gemini-3",
	// xAI, Mistral
	"grok-2-vision", "grok-4", "pixtral", "mistral-small3.1", "mistral-small-3.1", "mistral-medium-3",
	// open models as Ollama, vLLM and LM Studio name them
	"llava", "bakllava", "llava-llama3", "llava-phi3", "llama3.2-vision", "llama-3.2-11b-vision", "llama-3.2-90b-vision", "llama4",
	"qwen2-vl", "qwen2.5-vl", "qwen2.5vl", "qwen3-vl", "qwen-vl", "minicpm-v", "moondream", "gemma3", "gemma-3", "granite3.2-vision", "internvl",
}

// notVision are members of those families that take no images.
var notVision = []string{"o1-mini", "o1-preview", "o3-mini", "gemma3:1b", "gemma-3-1b", "gpt-4o-audio", "gpt-4o-mini-audio",
	"gpt-4o-transcribe", "gpt-4o-mini-transcribe", "gpt-4o-search", "gpt-4o-mini-search", "gpt-4o-realtime", "gpt-4o-mini-realtime", "gpt-4o-mini-tts"}

// TakesImages says whether model is known to read images.
func TakesImages(model string) bool {
	name := bareName(model)
	of := func(family string) bool { return familyOf(name, family) }
	return !slices.ContainsFunc(notVision, of) && slices.ContainsFunc(visionFamilies, of)
}

// bareName is a model's name in lower case without a router's or registry's prefix ("openai/gpt-4o" on
// OpenRouter, "library/llava" from Ollama), as the built-in lists name models.
func bareName(model string) string {
	name := strings.ToLower(model)
	return name[strings.LastIndexByte(name, '/')+1:]
}

func familyOf(name, family string) bool {
	rest, ok := strings.CutPrefix(name, family)
	return ok && (rest == "" || strings.ContainsRune("-:.@", rune(rest[0])))
}
