package config

import (
	"github.com/postgram-go/postgram/llm"

	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/anthropic"
	"github.com/postgram-go/postgram/providers/ollama"
	"github.com/postgram-go/postgram/providers/openai"
)

// Extraction is the LLM side of the configuration: relation extraction,
// and the same model for memory grooming and edge validation.
type Extraction struct {
	Enabled  bool   // EXTRACTION_ENABLED, default false
	Provider string // EXTRACTION_PROVIDER: openai (default), anthropic, ollama, openai-compatible
	Model    string // EXTRACTION_MODEL (default per provider)
	BaseURL  string // EXTRACTION_BASE_URL (required for openai-compatible; OLLAMA_BASE_URL for ollama)
	APIKey   string // EXTRACTION_API_KEY, else OPENAI_API_KEY / ANTHROPIC_API_KEY by provider
	// Timeout bounds one LLM call (EXTRACTION_TIMEOUT_MS, or the
	// reference server's name for it, LLM_REQUEST_TIMEOUT_MS; default
	// 120000).
	Timeout time.Duration
	// DisableThinking (EXTRACTION_DISABLE_THINKING, default false) turns
	// the reasoning of thinking models off where the provider can: it
	// sends reasoning effort "minimal" to OpenAI and think false to
	// Ollama, unless EXTRACTION_REASONING_EFFORT is set (which wins). It
	// changes nothing for Anthropic (whose extended thinking is off
	// unless asked for) and openai-compatible servers (which may not know
	// the parameter).
	DisableThinking bool
	// ReasoningEffort (EXTRACTION_REASONING_EFFORT: minimal, low, medium,
	// high) is forwarded to reasoning models (OpenAI, Ollama).
	ReasoningEffort string
	// ContextLength is Ollama's num_ctx (EXTRACTION_CONTEXT_LENGTH,
	// default 16384: long notes need more than Ollama's default).
	ContextLength int
	MemoryMode    postgram.MemoryExtractionMode // EXTRACTION_MEMORY_MODE, default embed_only
	// AutoCreate (EXTRACTION_AUTO_CREATE_ENTITIES, default false),
	// AutoCreateTypes (EXTRACTION_AUTO_CREATE_TYPES, default
	// person,project,interaction), AutoCreateMinConfidence
	// (EXTRACTION_AUTO_CREATE_MIN_CONFIDENCE, default 0.7).
	AutoCreate              bool
	AutoCreateTypes         []postgram.EntityType
	AutoCreateMinConfidence float64
	// SemanticNeighbors (EXTRACTION_SEMANTIC_NEIGHBORS_ENABLED, default
	// false), NeighborsMax (EXTRACTION_SEMANTIC_NEIGHBORS_MAX, default 10),
	// NeighborsMinSimilarity (EXTRACTION_SEMANTIC_NEIGHBORS_MIN_SIMILARITY,
	// default 0.65).
	SemanticNeighbors      bool
	NeighborsMax           int
	NeighborsMinSimilarity float64
	Concurrency            int // EXTRACTION_CONCURRENCY, default 2

	// Keys and hosts of the other providers, for per-entity overrides
	// (pgm-admin improve-graph --provider).
	openAIKey, anthropicKey, ollamaURL string
	// llm is the configured model, built (and so checked) by Parse.
	llm llm.Model
}

// extractionTimeout reads EXTRACTION_TIMEOUT_MS or its alias
// LLM_REQUEST_TIMEOUT_MS (the reference server's name); both set to
// different values is an error.
func extractionTimeout(get Getenv) (int, error) {
	const def, max = 120000, 3600 * 1000
	ours, err := intVar(get, "EXTRACTION_TIMEOUT_MS", def, 1, max)
	if err != nil {
		return 0, err
	}
	alias, err := intVar(get, "LLM_REQUEST_TIMEOUT_MS", def, 1, max)
	if err != nil {
		return 0, err
	}
	oursSet := strings.TrimSpace(get("EXTRACTION_TIMEOUT_MS")) != ""
	aliasSet := strings.TrimSpace(get("LLM_REQUEST_TIMEOUT_MS")) != ""
	switch {
	case oursSet && aliasSet && ours != alias:
		return 0, fmt.Errorf("EXTRACTION_TIMEOUT_MS (%d) and LLM_REQUEST_TIMEOUT_MS (%d) disagree: set one of them", ours, alias)
	case aliasSet:
		return alias, nil
	}
	return ours, nil
}

// effort is the reasoning effort sent to provider: the configured one,
// or "minimal" when DisableThinking asks for it and the provider
// understands it.
func (x *Extraction) effort(provider string) string {
	if x.ReasoningEffort == "" && x.DisableThinking && (provider == "openai" || provider == "ollama") {
		return "minimal"
	}
	return x.ReasoningEffort
}

// extractionProviders are the accepted EXTRACTION_PROVIDER values.
var extractionProviders = []string{"openai", "anthropic", "ollama", "openai-compatible"}

func parseExtraction(get Getenv) (Extraction, error) {
	x := Extraction{
		Provider:        strings.ToLower(or(get("EXTRACTION_PROVIDER"), "openai")),
		Model:           strings.TrimSpace(get("EXTRACTION_MODEL")),
		BaseURL:         strings.TrimSpace(get("EXTRACTION_BASE_URL")),
		APIKey:          strings.TrimSpace(get("EXTRACTION_API_KEY")),
		ReasoningEffort: strings.ToLower(strings.TrimSpace(get("EXTRACTION_REASONING_EFFORT"))),
		MemoryMode:      postgram.MemoryExtractionMode(strings.ToLower(or(get("EXTRACTION_MEMORY_MODE"), string(postgram.MemoryEmbedOnly)))),
		openAIKey:       strings.TrimSpace(get("OPENAI_API_KEY")),
		anthropicKey:    strings.TrimSpace(get("ANTHROPIC_API_KEY")),
		ollamaURL:       strings.TrimSpace(get("OLLAMA_BASE_URL")),
	}
	var err error
	if x.Enabled, err = boolVar(get, "EXTRACTION_ENABLED", false); err != nil {
		return x, err
	}
	if x.AutoCreate, err = boolVar(get, "EXTRACTION_AUTO_CREATE_ENTITIES", false); err != nil {
		return x, err
	}
	if x.SemanticNeighbors, err = boolVar(get, "EXTRACTION_SEMANTIC_NEIGHBORS_ENABLED", false); err != nil {
		return x, err
	}
	ms, err := extractionTimeout(get)
	if err != nil {
		return x, err
	}
	x.Timeout = time.Duration(ms) * time.Millisecond
	if x.DisableThinking, err = boolVar(get, "EXTRACTION_DISABLE_THINKING", false); err != nil {
		return x, err
	}
	if x.ContextLength, err = intVar(get, "EXTRACTION_CONTEXT_LENGTH", 16384, 0, 1<<20); err != nil {
		return x, err
	}
	if x.NeighborsMax, err = intVar(get, "EXTRACTION_SEMANTIC_NEIGHBORS_MAX", 10, 1, 100); err != nil {
		return x, err
	}
	if x.Concurrency, err = intVar(get, "EXTRACTION_CONCURRENCY", 2, 1, 64); err != nil {
		return x, err
	}
	if x.AutoCreateMinConfidence, err = fraction(get, "EXTRACTION_AUTO_CREATE_MIN_CONFIDENCE", 0.7); err != nil {
		return x, err
	}
	if x.NeighborsMinSimilarity, err = fraction(get, "EXTRACTION_SEMANTIC_NEIGHBORS_MIN_SIMILARITY", 0.65); err != nil {
		return x, err
	}
	types := or(get("EXTRACTION_AUTO_CREATE_TYPES"), "person,project,interaction")
	for _, t := range strings.Split(types, ",") {
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "" {
			continue
		}
		if !postgram.EntityType(t).Valid() {
			return x, fmt.Errorf("EXTRACTION_AUTO_CREATE_TYPES: %q is not an entity type", t)
		}
		x.AutoCreateTypes = append(x.AutoCreateTypes, postgram.EntityType(t))
	}
	if !x.MemoryMode.Valid() {
		return x, fmt.Errorf("EXTRACTION_MEMORY_MODE: %q is not one of embed_only, extract_durable, extract_all", x.MemoryMode)
	}
	switch x.ReasoningEffort {
	case "", "minimal", "low", "medium", "high":
	default:
		return x, fmt.Errorf("EXTRACTION_REASONING_EFFORT: %q is not one of minimal, low, medium, high", x.ReasoningEffort)
	}
	if !validProvider(x.Provider) {
		return x, fmt.Errorf("EXTRACTION_PROVIDER: %q is not one of %s", x.Provider, strings.Join(extractionProviders, ", "))
	}
	if x.Enabled {
		if x.llm, err = x.LLM(postgram.ExtractOverride{}); err != nil {
			return x, err
		}
	}
	return x, nil
}

func validProvider(p string) bool {
	for _, v := range extractionProviders {
		if p == v {
			return true
		}
	}
	return false
}

func fraction(get Getenv, name string, def float64) (float64, error) {
	s := strings.TrimSpace(get(name))
	if s == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > 1 {
		return 0, fmt.Errorf("%s: %q must be a number between 0 and 1", name, s)
	}
	return f, nil
}

// Info is the configured model's provider and name ("" when disabled).
func (x *Extraction) Info() llm.Info {
	if x.llm == nil {
		return llm.Info{}
	}
	return x.llm.Info()
}

// LLM builds the chat model for the configured provider and model, or for
// an override's (the override's provider takes that provider's own key
// and host variables unless it is the configured provider).
func (x *Extraction) LLM(o postgram.ExtractOverride) (llm.Model, error) {
	provider, model, baseURL, key := x.Provider, x.Model, x.BaseURL, x.APIKey
	if o.Provider != "" && o.Provider != x.Provider {
		provider, model, baseURL, key = strings.ToLower(o.Provider), "", "", ""
		if !validProvider(provider) {
			return nil, fmt.Errorf("provider %q is not one of %s: %w", o.Provider, strings.Join(extractionProviders, ", "), postgram.ErrInvalidArgument)
		}
		if provider == "openai-compatible" {
			// Only the configured endpoint is known.
			return nil, fmt.Errorf("provider openai-compatible needs EXTRACTION_BASE_URL; make it EXTRACTION_PROVIDER: %w", postgram.ErrInvalidArgument)
		}
	}
	if o.Model != "" {
		model = o.Model
	}
	name := "EXTRACTION_"
	switch provider {
	case "openai", "openai-compatible":
		if key == "" && provider == "openai" {
			key = x.openAIKey
		}
		if provider == "openai-compatible" && baseURL == "" {
			return nil, fmt.Errorf("%sBASE_URL: required when EXTRACTION_PROVIDER is openai-compatible", name)
		}
		c, err := openai.NewChat(openai.ChatConfig{APIKey: key, BaseURL: baseURL, Model: model, Provider: provider,
			ReasoningEffort: x.effort(provider), Timeout: x.Timeout, UserAgent: "postgram"})
		if err != nil {
			return nil, fmt.Errorf("%sPROVIDER %s: %w", name, provider, err)
		}
		return c, nil
	case "anthropic":
		if key == "" {
			key = x.anthropicKey
		}
		c, err := anthropic.New(anthropic.Config{APIKey: key, BaseURL: baseURL, Model: model, Timeout: x.Timeout, UserAgent: "postgram"})
		if err != nil {
			return nil, fmt.Errorf("%sPROVIDER anthropic (EXTRACTION_API_KEY or ANTHROPIC_API_KEY): %w", name, err)
		}
		return c, nil
	case "ollama":
		if baseURL == "" {
			baseURL = x.ollamaURL
		}
		c, err := ollama.NewChat(ollama.ChatConfig{BaseURL: baseURL, Model: model, APIKey: key, ReasoningEffort: x.effort(provider),
			ContextLength: x.ContextLength, Timeout: x.Timeout})
		if err != nil {
			return nil, fmt.Errorf("%sPROVIDER ollama: %w", name, err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("%sPROVIDER: %q is not one of %s", name, provider, strings.Join(extractionProviders, ", "))
}

// Library is the library's extraction configuration: no Extractor when
// EXTRACTION_ENABLED is false.
func (x *Extraction) Library() postgram.ExtractionConfig {
	cfg := postgram.ExtractionConfig{
		MemoryMode: x.MemoryMode, AutoCreate: x.AutoCreate, AutoCreateTypes: x.AutoCreateTypes,
		AutoCreateMinConfidence: x.AutoCreateMinConfidence, SemanticNeighbors: x.SemanticNeighbors,
		Neighbors:   postgram.NeighborOptions{MinSimilarity: x.NeighborsMinSimilarity, MaxNeighbors: x.NeighborsMax},
		Concurrency: x.Concurrency,
	}
	if x.llm == nil {
		return cfg
	}
	cfg.Extractor = llm.NewExtractor(x.llm)
	cfg.ForOverride = func(o postgram.ExtractOverride) (llm.Extractor, error) {
		l, err := x.LLM(o)
		if err != nil {
			return nil, err
		}
		return llm.NewExtractor(l), nil
	}
	return cfg
}

// Groomer is the LLM groomer (promotion, durable review, rewrites), nil
// when extraction is not enabled.
func (x *Extraction) Groomer() llm.Groomer {
	if x.llm == nil {
		return nil
	}
	return llm.NewGroomer(x.llm)
}

// Judge is the LLM edge judge (pgm-admin validate-edges), nil when
// extraction is not enabled.
func (x *Extraction) Judge() llm.EdgeJudge {
	if x.llm == nil {
		return nil
	}
	return llm.NewJudge(x.llm)
}
