// Package llm is the language-model side of the library: the Model
// interface the providers implement (providers/openai, providers/anthropic,
// providers/ollama), and the three tasks the library asks a model to do,
// each with its prompt, JSON Schema and a strict check of the answer:
//
//   - relation extraction (Extractor; NewExtractor makes one from a Model),
//   - memory grooming (Groomer; NewGroomer),
//   - edge validation (EdgeJudge; NewJudge).
//
// The interfaces are also the seams for custom implementations: a
// Config's ExtractionConfig takes any Extractor, GroomRequest any Groomer.
// An answer that is not the requested schema is an error wrapping
// postgram.ErrLLMFailed (driver.ErrLLMFailed) that names the offending field.
package llm
