package wire

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/postgram-go/postgram"
)

// SearchRequest is the body of POST /api/search. Type and Visibility take
// one string or an array of strings.
type SearchRequest struct {
	Query           string     `json:"query"`
	Type            StringList `json:"type,omitempty"`
	Tags            []string   `json:"tags,omitempty"`
	Visibility      StringList `json:"visibility,omitempty"`
	Owner           string     `json:"owner,omitempty"`
	MemoryRole      string     `json:"memory_role,omitempty"`
	Limit           int        `json:"limit,omitempty"`
	Threshold       *float64   `json:"threshold,omitempty"`
	RecencyWeight   float64    `json:"recency_weight,omitempty"`
	ExpandGraph     bool       `json:"expand_graph,omitempty"`
	IncludeArchived bool       `json:"include_archived,omitempty"`
	IncludeContent  *bool      `json:"include_content,omitempty"`
	Strategy        string     `json:"strategy,omitempty"`
	Ranking         string     `json:"ranking,omitempty"`
	Explain         bool       `json:"explain,omitempty"`
}

// Request converts the body to the library's SearchRequest.
func (r SearchRequest) Request() postgram.SearchRequest {
	return postgram.SearchRequest{
		Query:           r.Query,
		Types:           convert[postgram.EntityType](r.Type),
		Tags:            r.Tags,
		Visibilities:    convert[postgram.Visibility](r.Visibility),
		Owner:           r.Owner,
		MemoryRole:      postgram.MemoryRole(r.MemoryRole),
		IncludeArchived: r.IncludeArchived,
		Limit:           r.Limit,
		Threshold:       r.Threshold,
		RecencyWeight:   r.RecencyWeight,
		ExpandGraph:     r.ExpandGraph,
		IncludeContent:  r.IncludeContent,
		Strategy:        postgram.Strategy(r.Strategy),
		Ranking:         postgram.RankingMode(r.Ranking),
		Explain:         r.Explain,
	}
}

// SearchResponse is the answer of POST /api/search: {results, degraded?,
// stats}.
type SearchResponse = postgram.SearchResponse

// StringList is a list of strings that also accepts a single string on
// the wire ("task" is ["task"]; "" and null are empty). One item is sent
// as a string (the only form the reference server reads), several as an
// array.
type StringList []string

// MarshalJSON writes one item as a string, several as an array.
func (l StringList) MarshalJSON() ([]byte, error) {
	if len(l) == 1 {
		return json.Marshal(l[0])
	}
	return json.Marshal([]string(l))
}

// StringListType is StringList's reflect.Type, for decoders that name
// the expected type in their errors.
var StringListType = reflect.TypeFor[StringList]()

// UnmarshalJSON accepts a string, an array of strings or null. Anything
// else is a *json.UnmarshalTypeError whose Value says what was found.
func (l *StringList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		*l = nil
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = nil
		if one != "" {
			*l = StringList{one}
		}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		got := "a value of another type"
		switch b[0] {
		case '[':
			got = "an array with an item that is not a string"
		case '{':
			got = "an object"
		case 't', 'f':
			got = "a boolean"
		default:
			if b[0] == '-' || (b[0] >= '0' && b[0] <= '9') {
				got = "a number"
			}
		}
		return &json.UnmarshalTypeError{Value: got, Type: StringListType}
	}
	*l = many
	return nil
}

func convert[T ~string](in []string) []T {
	if len(in) == 0 {
		return nil
	}
	out := make([]T, len(in))
	for i, s := range in {
		out[i] = T(s)
	}
	return out
}
