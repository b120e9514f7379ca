package llm

import (
	"context"

	"github.com/postgram-go/postgram/driver"
)

// EdgeJudge decides whether an edge is supported by the content it was
// extracted from (pgm-admin validate-edges). NewJudge makes one from
// any LLM.
type EdgeJudge interface {
	JudgeEdge(ctx context.Context, c EdgeClaim) (EdgeVerdict, error)
}

// EdgeClaim is an edge put to an EdgeJudge.
type EdgeClaim struct {
	Relation   string            `json:"relation"`
	SourceName string            `json:"source_name"`
	SourceType driver.EntityType `json:"source_type"`
	TargetName string            `json:"target_name"`
	TargetType driver.EntityType `json:"target_type"`
	// Content is the text the edge was extracted from (its origin's
	// content, else the source entity's).
	Content string `json:"content"`
}

// EdgeVerdict is an EdgeJudge's answer.
type EdgeVerdict struct {
	Valid      bool    `json:"valid"`
	Confidence float64 `json:"confidence"`
	Reason     string  `json:"reason"`
}
