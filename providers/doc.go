// Package providers groups the model providers the library talks to, one
// package each: openai (OpenAI and OpenAI-compatible servers: embeddings
// and structured chat), ollama (embeddings and chat), anthropic (chat) and
// hashing (an offline, deterministic embedder). Each implements
// postgram.Embedder, llm.Model or both, keeps its SDK to itself (importing
// the root package links none of them) and is tested against local
// httptest servers speaking the provider's wire format.
package providers
