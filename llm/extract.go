package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/validate"
)

// Model is a chat model that answers one prompt with one JSON object
// matching a JSON Schema (structured output). Implementations live in
// providers/ (openai and OpenAI-compatible servers, anthropic, ollama);
// the library builds the prompts, so relation extraction, edge validation
// and memory grooming share one client per provider.
//
// GenerateJSON returns the model's JSON text (syntactically valid JSON;
// the caller checks it against the schema). Errors wrap ErrLLMFailed (the
// provider refused, the model refused, the answer was truncated or is not
// JSON), ErrRateLimited (HTTP 429) or ErrUnavailable (unreachable, 5xx,
// timeout, cancellation).
type Model interface {
	GenerateJSON(ctx context.Context, req Request) (json.RawMessage, error)
	// Info identifies the provider and model, for provenance.
	Info() Info
}

// Request is one structured-output prompt.
type Request struct {
	// System is the instruction; Prompt the material to work on.
	System string
	Prompt string
	// SchemaName names the schema (letters, digits, '_' and '-'); Schema is
	// a JSON Schema of an object, written so that OpenAI's strict mode
	// accepts it (every property required, additionalProperties false).
	SchemaName string
	Schema     map[string]any
	// MaxTokens bounds the answer; 0 takes the provider's default.
	MaxTokens int
}

// Info identifies a model.
type Info struct {
	Provider string `json:"provider"` // "openai", "openai-compatible", "anthropic", "ollama", ...
	Model    string `json:"model"`
}

// Extractor reads an entity's content and returns the relations it
// states. NewExtractor makes one from any LLM; tests use a scripted one
// (postgramtest or their own).
type Extractor interface {
	Extract(ctx context.Context, in ExtractInput) (*Extraction, error)
	// Info identifies the provider, model and prompt version, recorded on
	// every edge the extraction produces.
	Info() ExtractorInfo
}

// ExtractorInfo identifies an extractor for provenance.
type ExtractorInfo struct {
	Provider      string `json:"provider"`
	Model         string `json:"model"`
	PromptVersion string `json:"prompt_version"`
}

// SelfName is how an extraction refers to the entity being read.
const SelfName = "SELF"

// ExtractInput is what an extractor reads.
type ExtractInput struct {
	// Type and Content of the entity; Name is its display name (title,
	// name or the start of its content), for the model's orientation.
	Type    driver.EntityType
	Name    string
	Content string
	// Known are existing entities the content may mention, so the model
	// can use their exact names.
	Known []KnownEntity
}

// KnownEntity is an existing entity offered to the model by name.
type KnownEntity struct {
	Name string            `json:"name"`
	Type driver.EntityType `json:"type"`
}

// Extraction is an extractor's answer.
type Extraction struct {
	// Entities the content mentions, with the type the model assigns
	// them (auto-created placeholders take this type).
	Entities []ExtractedEntity `json:"entities"`
	// Relations between named entities; SelfName stands for the entity
	// being read.
	Relations []ExtractedRelation `json:"relations"`
	// Info is the provider, model and prompt version that produced it.
	Info ExtractorInfo `json:"info"`
}

// ExtractedEntity is an entity the content mentions.
type ExtractedEntity struct {
	Name string            `json:"name"`
	Type driver.EntityType `json:"type"`
}

// ExtractedRelation is one relation the content states.
type ExtractedRelation struct {
	Source     string  `json:"source"`
	Target     string  `json:"target"`
	Relation   string  `json:"relation"`
	Confidence float64 `json:"confidence"`
}

// ExtractPromptVersion identifies the extraction prompt and schema below;
// it changes whenever they do, and is recorded on every extracted edge.
const ExtractPromptVersion = "extract-v1"

// maxExtractContent bounds the content sent to the model, in runes.
const maxExtractContent = 24_000

// Bounds on an extraction answer.
const (
	maxExtractedRelations = 200
	maxExtractedEntities  = 200
	maxExtractedName      = 200
)

const extractSystem = `You build a knowledge graph from notes. Read the entity below and list:
- entities: the people, projects, interactions (meetings, calls, conversations), documents, tasks and memories it names explicitly, each with its type (one of person, project, interaction, document, task, memory) and its name exactly as written (or as in the known-entities list when it is the same thing);
- relations: directed facts the text states between two of them, or between the entity being read (call it "SELF") and one of them. Use short snake_case relation names such as involves, assigned_to, part_of, blocked_by, mentioned_in, decided_by, owns, works_on, depends_on, related_to. Give each a confidence from 0 to 1: how clearly the text states it.
Only extract what the text says; do not guess. Never invent entities that are not named. If nothing qualifies, return empty lists. Answer with JSON only.`

// extractSchema is the JSON Schema of an extraction answer.
func extractSchema() map[string]any {
	types := make([]any, len(driver.EntityTypes))
	for i, t := range driver.EntityTypes {
		types[i] = string(t)
	}
	str := map[string]any{"type": "string"}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"entities": map[string]any{"type": "array", "items": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name": str,
					"type": map[string]any{"type": "string", "enum": types},
				},
				"required":             []any{"name", "type"},
				"additionalProperties": false,
			}},
			"relations": map[string]any{"type": "array", "items": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"source":     str,
					"target":     str,
					"relation":   str,
					"confidence": map[string]any{"type": "number"},
				},
				"required":             []any{"source", "target", "relation", "confidence"},
				"additionalProperties": false,
			}},
		},
		"required":             []any{"entities", "relations"},
		"additionalProperties": false,
	}
}

// ModelExtractor extracts relations with an LLM, using the library's prompt
// (ExtractPromptVersion) and checking the answer against the schema.
type ModelExtractor struct {
	llm       Model
	maxTokens int
}

// NewExtractor returns an Extractor that asks llm.
func NewExtractor(llm Model) *ModelExtractor { return &ModelExtractor{llm: llm, maxTokens: 4096} }

// LLM returns the model the extractor asks (edge validation and grooming
// reuse it).
func (x *ModelExtractor) Model() Model { return x.llm }

// Info implements Extractor.
func (x *ModelExtractor) Info() ExtractorInfo {
	i := x.llm.Info()
	return ExtractorInfo{Provider: i.Provider, Model: i.Model, PromptVersion: ExtractPromptVersion}
}

// Extract implements Extractor. An answer that is not the schema (a
// missing field, an empty name or relation, a confidence outside 0..1, an
// unknown entity type) is an error wrapping ErrLLMFailed: the caller
// records a failure instead of writing part of a graph.
func (x *ModelExtractor) Extract(ctx context.Context, in ExtractInput) (*Extraction, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Entity being read (SELF): type %s", in.Type)
	if in.Name != "" {
		fmt.Fprintf(&b, ", name %q", in.Name)
	}
	b.WriteString("\n")
	if len(in.Known) > 0 {
		b.WriteString("\nKnown entities (use these names when the text means them):\n")
		for _, k := range in.Known {
			fmt.Fprintf(&b, "- %s (%s)\n", k.Name, k.Type)
		}
	}
	content := in.Content
	if r := []rune(content); len(r) > maxExtractContent {
		content = string(r[:maxExtractContent])
	}
	b.WriteString("\nContent:\n<<<\n")
	b.WriteString(content)
	b.WriteString("\n>>>\n")
	raw, err := x.llm.GenerateJSON(ctx, Request{System: extractSystem, Prompt: b.String(),
		SchemaName: "graph_extraction", Schema: extractSchema(), MaxTokens: x.maxTokens})
	if err != nil {
		return nil, err
	}
	out, err := ParseExtraction(raw)
	if err != nil {
		return nil, err
	}
	out.Info = x.Info()
	return out, nil
}

// ParseExtraction decodes and checks an extraction answer. Relation names
// are normalised to snake_case (lower case, spaces and '-' to '_').
func ParseExtraction(raw []byte) (*Extraction, error) {
	var ans struct {
		Entities *[]struct {
			Name *string `json:"name"`
			Type *string `json:"type"`
		} `json:"entities"`
		Relations *[]struct {
			Source     *string  `json:"source"`
			Target     *string  `json:"target"`
			Relation   *string  `json:"relation"`
			Confidence *float64 `json:"confidence"`
		} `json:"relations"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&ans); err != nil {
		return nil, fmt.Errorf("%w: the answer is not the extraction schema: %v", driver.ErrLLMFailed, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: the answer is not the extraction schema: %s", driver.ErrLLMFailed, fmt.Sprintf(format, args...))
	}
	if ans.Relations == nil {
		return nil, bad("relations is missing")
	}
	out := &Extraction{Entities: []ExtractedEntity{}, Relations: []ExtractedRelation{}}
	if ans.Entities != nil {
		if len(*ans.Entities) > maxExtractedEntities {
			return nil, bad("%d entities; at most %d", len(*ans.Entities), maxExtractedEntities)
		}
		for i, e := range *ans.Entities {
			if e.Name == nil || validate.CleanName(*e.Name) == "" {
				return nil, bad("entities[%d].name is missing or empty", i)
			}
			name := validate.CleanName(*e.Name)
			if len([]rune(name)) > maxExtractedName {
				return nil, bad("entities[%d].name is longer than %d characters", i, maxExtractedName)
			}
			var t driver.EntityType
			if e.Type != nil {
				t = driver.EntityType(strings.ToLower(strings.TrimSpace(*e.Type)))
			}
			if !t.Valid() {
				return nil, bad("entities[%d].type %q is not an entity type", i, validate.Truncate(string(t), 40))
			}
			out.Entities = append(out.Entities, ExtractedEntity{Name: name, Type: t})
		}
	}
	if len(*ans.Relations) > maxExtractedRelations {
		return nil, bad("%d relations; at most %d", len(*ans.Relations), maxExtractedRelations)
	}
	for i, r := range *ans.Relations {
		switch {
		case r.Source == nil || validate.CleanName(*r.Source) == "":
			return nil, bad("relations[%d].source is missing or empty", i)
		case r.Target == nil || validate.CleanName(*r.Target) == "":
			return nil, bad("relations[%d].target is missing or empty", i)
		case r.Relation == nil:
			return nil, bad("relations[%d].relation is missing", i)
		case r.Confidence == nil:
			return nil, bad("relations[%d].confidence is missing", i)
		case math.IsNaN(*r.Confidence) || *r.Confidence < 0 || *r.Confidence > 1:
			return nil, bad("relations[%d].confidence %v is not between 0 and 1", i, *r.Confidence)
		}
		rel, err := validate.Relation(fmt.Sprintf("relations[%d].relation", i), snakeRelation(*r.Relation))
		if err != nil {
			return nil, bad("%v", err)
		}
		src, dst := validate.CleanName(*r.Source), validate.CleanName(*r.Target)
		if len([]rune(src)) > maxExtractedName || len([]rune(dst)) > maxExtractedName {
			return nil, bad("relations[%d] names an entity longer than %d characters", i, maxExtractedName)
		}
		out.Relations = append(out.Relations, ExtractedRelation{Source: src, Target: dst, Relation: rel, Confidence: *r.Confidence})
	}
	return out, nil
}

// snakeRelation lower-cases a relation and joins its words with '_'.
func snakeRelation(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || r == '-'
	}), "_")
}
