package storagetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
)

// RepeatQuery is the text whose vector RepeatedQueryChanges's searches ask
// for, and RepeatTag the tag half of its entities carry.
const (
	RepeatQuery = "lighthouse keeper log harbor 3"
	RepeatTag   = "coast"
)

// SeedRepeatedQuery stores, through c, 60 entities near RepeatQuery (every
// other one tagged RepeatTag) and embeds them.
func SeedRepeatedQuery(t testing.TB, c *postgram.Client) {
	t.Helper()
	ctx := context.Background()
	for i := range 60 {
		in := postgram.StoreInput{Type: postgram.TypeMemory, Content: fmt.Sprintf("lighthouse keeper log %d, harbor %d", i, i%7)}
		if i%2 == 0 {
			in.Tags = []string{RepeatTag}
		}
		if _, err := c.Store(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := postgramtest.Admin(t, c).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
}

// RepeatedQueryChanges makes through c each kind of change that can move
// the results of a repeated vector query (for the stores' remembered
// results, vecscan.Set.TopKCached), calling check after each: a store near
// the query (before and after its vector), the top hit under the tag
// losing it, the top hit archived, its text replaced (before and after its
// new vector), the top hit deleted, an entity gaining the tag. top returns
// the id of the query's top hit under a filter.
func RepeatedQueryChanges(t testing.TB, c *postgram.Client, top func(f driver.EntityFilter) uuid.UUID, check func(what string)) {
	t.Helper()
	ctx := context.Background()
	admin := postgramtest.Admin(t, c)
	embed := func() {
		t.Helper()
		if _, err := admin.EnrichPending(ctx); err != nil {
			t.Fatal(err)
		}
	}
	current := func(id uuid.UUID) *postgram.Entity {
		t.Helper()
		e, err := c.Recall(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	update := func(id uuid.UUID, in postgram.UpdateInput) {
		t.Helper()
		in.Version = current(id).Version
		if _, err := c.Update(ctx, id, in); err != nil {
			t.Fatal(err)
		}
	}
	check("after the load")
	if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: RepeatQuery, Tags: []string{RepeatTag}}); err != nil {
		t.Fatal(err)
	}
	check("after a store near the query, before its vector")
	embed()
	check("after its vector")
	none := []string{}
	update(top(driver.EntityFilter{Tags: []string{RepeatTag}}), postgram.UpdateInput{Tags: &none})
	check("after the top hit lost its tag")
	archived := postgram.StatusArchived
	update(top(driver.EntityFilter{}), postgram.UpdateInput{Status: &archived})
	check("after the top hit was archived")
	text := "an unrelated text about quarterly budgets"
	update(top(driver.EntityFilter{}), postgram.UpdateInput{Content: &text})
	check("after the top hit's text changed, before its vector")
	embed()
	check("after its new vector")
	if _, err := c.Delete(ctx, top(driver.EntityFilter{})); err != nil {
		t.Fatal(err)
	}
	check("after the top hit was deleted")
	untagged := top(driver.EntityFilter{Types: []postgram.EntityType{postgram.TypeMemory}})
	tags := []string{RepeatTag, "again"}
	update(untagged, postgram.UpdateInput{Tags: &tags})
	check("after an entity gained the tag")
}
