package storagetest

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/postgram-go/postgram/driver"
)

// testOAuthRecords covers the OAuth records: insert once, read back,
// compare-and-set updates (exactly one of two racing updates wins, which
// makes codes and refresh tokens single-use), listing by kind and the
// sweep of expired records.
func testOAuthRecords(t *testing.T, open Opener) {
	ctx := t.Context()
	st := open(t)
	exp := time.Now().UTC().Add(time.Minute).Truncate(time.Millisecond)
	code := &driver.OAuthRecord{Kind: "code", ID: "c1", Data: []byte(`{"client":"a","used":false}`), ExpiresAt: &exp}
	if err := st.PutOAuthRecord(ctx, code); err != nil || code.Version != 1 {
		t.Fatalf("put: %v (version %d)", err, code.Version)
	}
	if err := st.PutOAuthRecord(ctx, &driver.OAuthRecord{Kind: "code", ID: "c1", Data: []byte(`{}`)}); !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("second put of c1: %v, want ErrConflict", err)
	}
	if err := st.PutOAuthRecord(ctx, &driver.OAuthRecord{Kind: "client", ID: "c1", Data: []byte(`{"name":"n"}`)}); err != nil {
		t.Fatalf("same id, other kind: %v", err)
	}
	got, err := st.OAuthRecord(ctx, "code", "c1")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(got.Data, &doc); err != nil || doc["client"] != "a" || got.Version != 1 ||
		got.ExpiresAt == nil || !got.ExpiresAt.Equal(exp) || got.CreatedAt.IsZero() {
		t.Fatalf("read back: %+v (%s) %v", got, got.Data, err)
	}
	if _, err := st.OAuthRecord(ctx, "code", "nope"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("unknown record: %v", err)
	}
	// Two updates from version 1: exactly one wins.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := *got
			r.Data = []byte(`{"client":"a","used":true}`)
			errs[i] = st.UpdateOAuthRecord(ctx, &r)
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, driver.ErrConflict):
			t.Fatalf("racing update: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d racing updates won, want 1 (%v)", wins, errs)
	}
	after, _ := st.OAuthRecord(ctx, "code", "c1")
	if after.Version != 2 || string(after.Data) == string(got.Data) {
		t.Fatalf("after update: version %d data %s", after.Version, after.Data)
	}
	if err := st.UpdateOAuthRecord(ctx, &driver.OAuthRecord{Kind: "code", ID: "gone", Version: 1, Data: []byte(`{}`)}); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("update of a missing record: %v", err)
	}
	past := time.Now().UTC().Add(-time.Hour)
	if err := st.PutOAuthRecord(ctx, &driver.OAuthRecord{Kind: "code", ID: "c0", Data: []byte(`{}`), ExpiresAt: &past}); err != nil {
		t.Fatal(err)
	}
	list, err := st.OAuthRecords(ctx, "code")
	if err != nil || len(list) != 2 || list[0].ID != "c1" || list[1].ID != "c0" {
		t.Fatalf("list codes: %+v %v", list, err)
	}
	if n, err := st.DeleteExpiredOAuthRecords(ctx, time.Now()); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v, want 1", n, err)
	}
	if list, _ := st.OAuthRecords(ctx, "code"); len(list) != 1 || list[0].ID != "c1" {
		t.Fatalf("after sweep: %+v", list)
	}
	if list, _ := st.OAuthRecords(ctx, "client"); len(list) != 1 {
		t.Fatalf("clients: %+v", list)
	}
}
