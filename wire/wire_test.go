package wire_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/wire"
)

func TestStringList(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]wire.StringList{
		`"task"`:            {"task"},
		`["task","memory"]`: {"task", "memory"},
		`""`:                nil,
		`null`:              nil,
		`[]`:                {},
	} {
		var got wire.StringList
		if err := json.Unmarshal([]byte(in), &got); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if !cmp.Equal(got, want) {
			t.Errorf("%s: got %#v, want %#v", in, got, want)
		}
	}
	for in, kind := range map[string]string{
		`3`:       "a number",
		`[1]`:     "an array with an item that is not a string",
		`{"a":1}`: "an object",
		`true`:    "a boolean",
	} {
		var req wire.SearchRequest
		err := json.Unmarshal([]byte(`{"type":`+in+`}`), &req)
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) || te.Field != "type" || te.Value != kind || te.Type != wire.StringListType {
			t.Errorf("%s: %v (%+v)", in, err, te)
		}
	}
	// One item goes out as a string (the reference server reads only that).
	for _, c := range []struct {
		in   wire.StringList
		want string
	}{{wire.StringList{"a"}, `"a"`}, {wire.StringList{"a", "b"}, `["a","b"]`}, {nil, `null`}} {
		b, err := json.Marshal(c.in)
		if err != nil || string(b) != c.want {
			t.Errorf("%#v: %s %v", c.in, b, err)
		}
	}
}

func TestSearchRequestConverts(t *testing.T) {
	t.Parallel()
	th := 0.4
	var req wire.SearchRequest
	if err := json.Unmarshal([]byte(`{"query":"q","type":["task","memory"],"visibility":"work","threshold":0.4,"ranking":"seed"}`), &req); err != nil {
		t.Fatal(err)
	}
	want := postgram.SearchRequest{Query: "q", Types: []postgram.EntityType{"task", "memory"},
		Visibilities: []postgram.Visibility{"work"}, Threshold: &th, Ranking: postgram.RankingSeed}
	if d := cmp.Diff(want, req.Request()); d != "" {
		t.Error(d)
	}
}

func TestQueueResponseFailures(t *testing.T) {
	t.Parallel()
	st := driver.QueueStatus{Embedding: driver.EmbeddingQueue{Pending: 2}}
	b, _ := json.Marshal(wire.NewQueueResponse(st, false))
	if string(b) != `{"embedding":{"pending":2,"completed":0,"failed":0,"retry_eligible":0,"oldest_pending_secs":null},"extraction":null}` {
		t.Errorf("without failures: %s", b)
	}
	b, _ = json.Marshal(wire.NewQueueResponse(st, true))
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if f, ok := m["failures"].([]any); !ok || len(f) != 0 {
		t.Errorf("with failures: %s", b)
	}
}

func TestGroomResponse(t *testing.T) {
	t.Parallel()
	id, durable := uuid.New(), uuid.New()
	res := &postgram.GroomResult{Mode: postgram.GroomArchive, Eligible: 3, Archived: 1, Promoted: 1,
		Items: []postgram.GroomItem{{ID: id, PromotedTo: &durable, Entity: &postgram.Entity{ID: id, Content: "c"}}}}
	b, err := json.Marshal(wire.NewGroomResponse(res))
	if err != nil {
		t.Fatal(err)
	}
	var back wire.GroomResponse
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.EligibleCount != 3 || back.Skipped != 1 || len(back.Eligible) != 1 || back.Eligible[0].Owner != nil ||
		len(back.Promotions) != 1 || back.Promotions[0].DurableID != durable || back.GroomResult == nil || back.Archived != 1 {
		t.Errorf("%s", b)
	}
}
